//! The VAPID key Web Push is signed with: made here for an operator (`steward-preflight
//! --generate-vapid-key PATH`) and for `cargo xtask dev`, and read back for its public half, the
//! api's `WEB_PUSH_PUBLIC_KEY`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};

/// The application server key of `secret`: the uncompressed point, base64url without padding.
fn public_half(secret: &p256::SecretKey) -> String {
    URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes())
}

/// Writes a fresh P-256 key (PKCS#8 PEM) to `path`, owner-only, never over an existing file;
/// returns its public half.
pub fn generate(path: &Path) -> Result<String, String> {
    let secret = loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|error| format!("no randomness: {error}"))?;
        // A scalar at or above the curve order (about 2^-32 likely) is drawn again.
        if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
            break secret;
        }
    };
    let pem = secret
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|error| format!("cannot encode the key: {error}"))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    file.write_all(pem.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| format!("{}: {error}", path.display()))?;
    Ok(public_half(&secret))
}

/// The public half of the VAPID key at `path`.
pub fn public_key(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let secret = p256::SecretKey::from_pkcs8_pem(&text)
        .map_err(|_| format!("{}: not a P-256 PKCS#8 PEM private key", path.display()))?;
    Ok(public_half(&secret))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_generated_key_reads_back_to_the_same_public_half_and_is_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("vapid-key");
        let public = super::generate(&path).expect("generate");
        assert_eq!(super::public_key(&path).expect("read"), public);
        let point = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &public).expect("b64");
        assert_eq!((point.len(), point[0]), (65, 4), "an uncompressed P-256 point");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(super::generate(&path).is_err(), "an existing key is kept");
        assert_eq!(super::public_key(&path).expect("read"), public);
        assert_ne!(super::generate(&dir.path().join("other")).expect("another"), public);
    }
}
