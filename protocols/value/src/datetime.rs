//! A calendar date and time without a zone, as XML-RPC's `dateTime.iso8601` carries it.
//!
//! XML-RPC has no zone; msgpack's timestamp is UTC. rpcmux treats a naive time as UTC
//! when it must convert, which is what Python's `xmlrpc.client` and msgpack do.
//!
//! Precision is the nanosecond, both ways: fractional seconds are read and written back
//! (written only when non-zero, so whole seconds keep the plain forms every client
//! parses). Years outside 0..=9999 have no place in the basic `YYYYMMDD` form; they are
//! written in ISO 8601's expanded form with a sign, `+10000-01-01T00:00:00` or
//! `-0001-12-31T00:00:00`, which [`DateTime::parse`] reads back. Every value chrono
//! holds (years -262143..=262142) round-trips through [`DateTime::to_xmlrpc`] and
//! [`DateTime::to_iso8601`].

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use std::fmt;

/// A date and time without a zone, as XML-RPC's `dateTime.iso8601` carries it (taken
/// as UTC where a protocol needs an instant, such as msgpack's timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(pub NaiveDateTime);

impl DateTime {
    /// From seconds and nanoseconds since the Unix epoch (UTC).
    pub fn from_unix(secs: i64, nanos: u32) -> Option<Self> {
        chrono::DateTime::from_timestamp(secs, nanos).map(|d| DateTime(d.naive_utc()))
    }

    /// Seconds and nanoseconds since the Unix epoch, taking this time as UTC.
    pub fn to_unix(&self) -> (i64, u32) {
        let utc = self.0.and_utc();
        (utc.timestamp(), utc.timestamp_subsec_nanos())
    }

    /// From calendar fields; `None` if they name no real time.
    pub fn from_ymd_hms(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<Self> {
        NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|date| date.and_hms_opt(h, mi, s))
            .map(DateTime)
    }

    /// Parse the forms clients send: XML-RPC's `20020126T07:30:00`, `2002-01-26T07:30:00`,
    /// `20020126T073000`, with optional fractional seconds (kept to the nanosecond) and
    /// an optional trailing `Z` or `+hh:mm` offset (converted to UTC). A year outside
    /// 0..=9999 needs the expanded form with a sign: `+10000-01-01T00:00:00`.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if let Ok(d) = chrono::DateTime::parse_from_rfc3339(s) {
            return Some(DateTime(d.naive_utc()));
        }
        let s = s.strip_suffix('Z').unwrap_or(s);
        const FORMATS: [&str; 4] = [
            "%Y%m%dT%H:%M:%S%.f",
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y%m%dT%H%M%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
        ];
        FORMATS
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
            .map(DateTime)
    }

    /// XML-RPC's wire form, `YYYYMMDDTHH:MM:SS` (what Python's xmlrpc.client expects),
    /// with `.fff` / `.ffffff` / `.fffffffff` after the seconds only when they have a
    /// fraction. A year outside 0..=9999 is written in the expanded form
    /// `+YYYYY-MM-DDTHH:MM:SS`, the only one that can hold it (and that [`DateTime::parse`]
    /// reads back).
    pub fn to_xmlrpc(&self) -> String {
        let frac = self.has_fraction();
        let fmt = match (Self::basic_year(self.0.year()), frac) {
            (true, false) => "%Y%m%dT%H:%M:%S",
            (true, true) => "%Y%m%dT%H:%M:%S%.f",
            (false, false) => "%Y-%m-%dT%H:%M:%S",
            (false, true) => "%Y-%m-%dT%H:%M:%S%.f",
        };
        self.0.format(fmt).to_string()
    }

    /// ISO 8601 / RFC 3339 form used for JSON, e.g. `2002-01-26T07:30:00Z`; fractional
    /// seconds only when non-zero; a year outside 0..=9999 carries a sign (`+10000-…`).
    pub fn to_iso8601(&self) -> String {
        if self.has_fraction() {
            self.0.format("%Y-%m-%dT%H:%M:%S%.fZ").to_string()
        } else {
            self.0.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        }
    }

    /// Whether the seconds have a fraction (a leap second, held by chrono as nanoseconds
    /// from 1e9 up, is second 60 and has a fraction only beyond that).
    pub fn has_fraction(&self) -> bool {
        !matches!(self.0.nanosecond(), 0 | 1_000_000_000)
    }

    /// Whether `year` fits the basic form's four unsigned digits.
    fn basic_year(year: i32) -> bool {
        (0..=9999).contains(&year)
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_iso8601())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_client_forms_to_same_instant() {
        let want = DateTime::from_ymd_hms(2002, 1, 26, 7, 30, 0).unwrap();
        for s in [
            "20020126T07:30:00",
            "2002-01-26T07:30:00",
            "20020126T073000",
            "2002-01-26T07:30:00Z",
            "2002-01-26T09:30:00+02:00",
            " 20020126T07:30:00 ",
        ] {
            assert_eq!(DateTime::parse(s), Some(want), "{s}");
        }
        assert_eq!(DateTime::parse("yesterday"), None);
        assert_eq!(DateTime::parse("20021326T07:30:00"), None);
    }

    #[test]
    fn formats_and_unix_round_trip() {
        let d = DateTime::from_ymd_hms(2002, 1, 26, 7, 30, 0).unwrap();
        assert_eq!(d.to_xmlrpc(), "20020126T07:30:00");
        assert_eq!(d.to_iso8601(), "2002-01-26T07:30:00Z");
        let (s, n) = d.to_unix();
        assert_eq!(s, 1_012_030_200);
        assert_eq!(DateTime::from_unix(s, n), Some(d));
    }
}

#[cfg(test)]
mod exactness_tests {
    use super::*;

    fn at(y: i32, nanos: u32) -> DateTime {
        let d = NaiveDate::from_ymd_opt(y, 1, 2).unwrap();
        DateTime(d.and_hms_nano_opt(3, 4, 5, nanos).unwrap())
    }

    #[test]
    fn fractions_are_kept_and_written_only_when_non_zero() {
        let d = DateTime::parse("20260102T03:04:05.123456").unwrap();
        assert_eq!(d, at(2026, 123_456_000));
        assert_eq!(d.to_xmlrpc(), "20260102T03:04:05.123456");
        assert_eq!(d.to_iso8601(), "2026-01-02T03:04:05.123456Z");
        let ns = DateTime::parse("20260102T03:04:05.000000001").unwrap();
        assert_eq!(ns, at(2026, 1));
        assert_eq!(ns.to_xmlrpc(), "20260102T03:04:05.000000001");
        assert_eq!(at(2026, 0).to_xmlrpc(), "20260102T03:04:05");
        assert_eq!(at(2026, 500_000_000).to_xmlrpc(), "20260102T03:04:05.500");
    }

    #[test]
    fn every_year_chrono_holds_round_trips() {
        let min = DateTime(NaiveDateTime::MIN);
        let max = DateTime(NaiveDateTime::MAX);
        let mut cases = vec![min, max];
        for y in [-1, 0, 1, 999, 9999, 10000, 99999, 262142, -262143] {
            for nanos in [0, 1, 123_456_789, 999_999_999] {
                if NaiveDate::from_ymd_opt(y, 1, 2).is_some() {
                    cases.push(at(y, nanos));
                }
            }
        }
        for d in cases {
            for text in [d.to_xmlrpc(), d.to_iso8601()] {
                assert_eq!(DateTime::parse(&text), Some(d), "{text}");
            }
        }
        assert_eq!(at(10000, 0).to_xmlrpc(), "+10000-01-02T03:04:05");
        assert_eq!(at(-1, 0).to_xmlrpc(), "-0001-01-02T03:04:05");
        assert_eq!(at(0, 0).to_xmlrpc(), "00000102T03:04:05");
        assert_eq!(at(9999, 0).to_xmlrpc(), "99990102T03:04:05");
        // chrono's range ends at 262142: 262143 cannot be held, so never written.
        assert!(NaiveDate::from_ymd_opt(262143, 1, 2).is_none());
    }

    #[test]
    fn leap_second_survives() {
        let leap = NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_250_000_000)
            .unwrap();
        let d = DateTime(leap);
        assert_eq!(d.to_xmlrpc(), "20161231T23:59:60.250");
        assert_eq!(DateTime::parse(&d.to_xmlrpc()), Some(d));
        let whole = DateTime(leap.with_nanosecond(1_000_000_000).unwrap());
        assert_eq!(whole.to_xmlrpc(), "20161231T23:59:60");
        assert_eq!(DateTime::parse(&whole.to_xmlrpc()), Some(whole));
    }
}
