//! A throwaway PKI for the TLS tests, made with rcgen in a temporary directory: a test
//! CA, a server certificate for 127.0.0.1/localhost, a client certificate it signed
//! (CN `agent-7`), and a "rogue" client certificate from a CA the server does not know.
#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The CN of the client certificate the test CA signs.
pub const CLIENT_CN: &str = "agent-7";

/// PEM files on disk; the directory is removed on drop.
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn new() -> Pki {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rpcmux-pki-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Pki { dir };

        let (ca_params, ca_key) = ca("rpcmux test CA");
        pki.write("ca.pem", &ca_params.self_signed(&ca_key).unwrap().pem());
        let issuer = Issuer::new(ca_params, ca_key);

        let mut server =
            CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
        server
            .distinguished_name
            .push(DnType::CommonName, "rpcmux test server");
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        pki.leaf("server", &server, &issuer);

        pki.leaf("client", &client(CLIENT_CN), &issuer);

        let (rogue_ca, rogue_key) = ca("someone else's CA");
        pki.leaf(
            "rogue",
            &client(CLIENT_CN),
            &Issuer::new(rogue_ca, rogue_key),
        );
        pki
    }

    /// `<dir>/<name>` as a string, for command lines.
    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_owned()
    }

    /// The `rpcmux serve` flags for the server certificate.
    pub fn server_flags(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.path("server.pem"),
            "--tls-key".into(),
            self.path("server.key"),
        ]
    }

    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.join(name), text).unwrap();
    }

    fn leaf(&self, name: &str, params: &CertificateParams, issuer: &Issuer<'_, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, issuer).unwrap();
        self.write(&format!("{name}.pem"), &cert.pem());
        self.write(&format!("{name}.key"), &key.serialize_pem());
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ca(cn: &str) -> (CertificateParams, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    (p, KeyPair::generate().unwrap())
}

fn client(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::new(vec!["agent-7.example".into()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    p
}
