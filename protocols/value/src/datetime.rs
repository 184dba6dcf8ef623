//! A calendar date and time without a zone, as XML-RPC's `dateTime.iso8601` carries it.
//!
//! XML-RPC has no zone; msgpack's timestamp is UTC. rpcmux treats a naive time as UTC
//! when it must convert, which is what Python's `xmlrpc.client` and msgpack do.

use chrono::{NaiveDate, NaiveDateTime, Timelike};
use std::fmt;

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

    pub fn from_ymd_hms(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<Self> {
        NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|date| date.and_hms_opt(h, mi, s))
            .map(DateTime)
    }

    /// Parse the forms clients send: XML-RPC's `20020126T07:30:00`, `2002-01-26T07:30:00`,
    /// `20020126T073000`, with optional fractional seconds and an optional trailing `Z`
    /// or `+hh:mm` offset (converted to UTC).
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

    /// XML-RPC's wire form, `YYYYMMDDTHH:MM:SS` (what Python's xmlrpc.client expects).
    pub fn to_xmlrpc(&self) -> String {
        self.0.format("%Y%m%dT%H:%M:%S").to_string()
    }

    /// ISO 8601 / RFC 3339 form used for JSON, e.g. `2002-01-26T07:30:00Z`.
    pub fn to_iso8601(&self) -> String {
        if self.0.nanosecond() == 0 {
            self.0.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        } else {
            self.0.format("%Y-%m-%dT%H:%M:%S%.fZ").to_string()
        }
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
