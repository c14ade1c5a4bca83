//! DKIM signing for tests and the demo mailbox: an Ed25519 key made at run time (never a
//! fixture), the TXT record that publishes it, and messages signed over chosen headers with
//! `mail-auth` (the library the service verifies with).

use base64::Engine as _;
use mail_auth::common::crypto::Ed25519Key;
use mail_auth::common::headers::HeaderWriter as _;
use mail_auth::dkim::DkimSigner;

/// Every header a newsletter's signature covers when it offers one-click (RFC 8058 §4).
pub const ONE_CLICK_HEADERS: &[&str] = &[
    "From",
    "To",
    "Subject",
    "Date",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

/// A signing domain and selector with a key made now.
pub struct Signer {
    pub domain: String,
    pub selector: String,
    pkcs8: Vec<u8>,
    public: Vec<u8>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({}._domainkey.{})", self.selector, self.domain)
    }
}

impl Signer {
    pub fn generate(domain: &str, selector: &str) -> Signer {
        let pkcs8 = Ed25519Key::generate_pkcs8().expect("generate an Ed25519 key");
        let public = Ed25519Key::from_pkcs8_der(&pkcs8)
            .expect("read the key back")
            .public_key();
        Signer {
            domain: domain.to_owned(),
            selector: selector.to_owned(),
            pkcs8,
            public,
        }
    }

    /// The name the key is published at.
    pub fn record_name(&self) -> String {
        format!("{}._domainkey.{}", self.selector, self.domain)
    }

    /// The TXT record publishing the public key.
    pub fn record(&self) -> String {
        format!(
            "v=DKIM1; k=ed25519; p={}",
            base64::engine::general_purpose::STANDARD.encode(&self.public)
        )
    }

    /// `raw` with a `DKIM-Signature` over `headers` prepended.
    pub fn sign(&self, raw: &[u8], headers: &[&str]) -> Vec<u8> {
        let key = Ed25519Key::from_pkcs8_der(&self.pkcs8).expect("the key");
        let signature = DkimSigner::from_key(key)
            .domain(self.domain.clone())
            .selector(self.selector.clone())
            .headers(headers.iter().copied())
            .sign(raw)
            .expect("sign the message");
        let mut signed = signature.to_header().into_bytes();
        signed.extend_from_slice(raw);
        signed
    }
}
