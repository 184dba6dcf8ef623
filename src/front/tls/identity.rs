//! The name a verified client certificate gives its holder, for `peer_identity`.
//!
//! The subject's Common Name when it has one (what VDSM and most mTLS deployments
//! key on), else the first subject alternative name that is a name: DNS, e-mail,
//! URI (SPIFFE ids), or an IP address. Only certificates rustls has already
//! verified against the client CA reach this, so the name can be trusted as such.

use std::net::IpAddr;
use std::sync::Arc;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The identity in the leaf certificate `der`, if it names one.
pub fn of(der: &[u8]) -> Option<Arc<str>> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let cn = cert
        .subject()
        .iter_common_name()
        .find_map(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty());
    if let Some(cn) = cn {
        return Some(cn.into());
    }
    let san = cert.subject_alternative_name().ok()??;
    san.value.general_names.iter().find_map(|name| match name {
        GeneralName::DNSName(s) | GeneralName::RFC822Name(s) | GeneralName::URI(s) => {
            Some(Arc::from(*s))
        }
        GeneralName::IPAddress(b) => ip(b).map(|ip| Arc::from(ip.to_string())),
        _ => None,
    })
}

fn ip(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(b).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(b).ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    fn der(cn: Option<&str>, sans: &[&str]) -> Vec<u8> {
        let mut p =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        p.distinguished_name = DistinguishedName::new();
        if let Some(cn) = cn {
            p.distinguished_name.push(DnType::CommonName, cn);
        }
        let key = KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn common_name_first_then_first_san() {
        assert_eq!(
            of(&der(Some("agent-7"), &["host.example"])).as_deref(),
            Some("agent-7")
        );
        assert_eq!(
            of(&der(None, &["host.example", "other.example"])).as_deref(),
            Some("host.example")
        );
        assert_eq!(of(&der(None, &["10.1.2.3"])).as_deref(), Some("10.1.2.3"));
        assert_eq!(of(&der(None, &[])), None);
        assert_eq!(of(b"not a certificate"), None);
    }
}
