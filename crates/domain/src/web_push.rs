//! What a browser's push subscription must look like to be registered (`POST
//! /v1/devices/web-push`). Each rule is also an OpenAPI pattern, so a request the document
//! allows is one the server accepts: the API's tests compare the schema's patterns with these.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The push service's endpoint: `https://`, a host of visible ASCII without `/ ? # @` (so no
/// credentials), then an optional path of visible ASCII without a fragment.
pub const ENDPOINT_PATTERN: &str = r#"^https://[!"$-.0->A-~]+(/[!"$-~]*)?$"#;
/// Its longest accepted form.
pub const ENDPOINT_MAX: usize = 2048;
/// The subscription's P-256 public key: an uncompressed point (65 bytes, `0x04` first),
/// base64url without padding — 87 characters, the last one carrying no stray bits.
pub const P256DH_PATTERN: &str = r"^B[A-P][A-Za-z0-9_-]{84}[AEIMQUYcgkosw048]$";
/// The subscription's 16-byte authentication secret, base64url without padding.
pub const AUTH_PATTERN: &str = r"^[A-Za-z0-9_-]{21}[AQgw]$";

/// [`ENDPOINT_PATTERN`] within [`ENDPOINT_MAX`].
pub fn is_endpoint(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("https://") else {
        return false;
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    text.len() <= ENDPOINT_MAX
        && !host.is_empty()
        && host
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && !b"/?#@".contains(&b))
        && path.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'#')
}

/// [`P256DH_PATTERN`].
pub fn is_p256dh(text: &str) -> bool {
    text.len() == 87
        && URL_SAFE_NO_PAD
            .decode(text)
            .is_ok_and(|bytes| bytes.len() == 65 && bytes[0] == 4)
}

/// [`AUTH_PATTERN`].
pub fn is_auth(text: &str) -> bool {
    text.len() == 22 && URL_SAFE_NO_PAD.decode(text).is_ok_and(|bytes| bytes.len() == 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        for good in [
            "https://fcm.googleapis.com/fcm/send/abc:APA91b",
            "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
            "https://web.push.apple.com/QGuQyavXutnMH",
            "https://push.example.test:8443/send?x=1",
            "https://h",
        ] {
            assert!(is_endpoint(good), "{good}");
        }
        for bad in [
            "http://push.example.test/send",
            "https://",
            "https:///path",
            "https://user:pw@push.example.test/",
            "https://push.example.test/send#frag",
            "https://push.example.test/se nd",
            "https://push.example.test?x",
            "https://push.example.test/\u{e9}",
        ] {
            assert!(!is_endpoint(bad), "{bad}");
        }
        assert!(!is_endpoint(&format!("https://h/{}", "a".repeat(ENDPOINT_MAX))));
    }

    #[test]
    fn keys_are_exact_base64url_without_stray_bits() {
        let point = URL_SAFE_NO_PAD.encode([4u8; 65]);
        assert!(is_p256dh(&point));
        assert!(
            !is_p256dh(&URL_SAFE_NO_PAD.encode([3u8; 65])),
            "compressed or other forms"
        );
        assert!(!is_p256dh(&format!("{point}=")), "padding");
        let mut stray = point.clone();
        stray.replace_range(86.., "B");
        assert!(!is_p256dh(&stray), "a last character with stray bits");
        assert!(is_auth(&URL_SAFE_NO_PAD.encode([7u8; 16])));
        assert!(!is_auth(&URL_SAFE_NO_PAD.encode([7u8; 15])));
        assert!(!is_auth("_ordMnz7uTCmrpBTeUV4Bx"));
        // What the patterns' last classes list is what decodes.
        for (length, bytes, last) in [(87usize, 65usize, "AEIMQUYcgkosw048"), (22, 16, "AQgw")] {
            let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            for c in alphabet.chars() {
                let text = format!("B{}{c}", "A".repeat(length - 2));
                let decodes = URL_SAFE_NO_PAD.decode(&text).is_ok_and(|b| b.len() == bytes);
                assert_eq!(decodes, last.contains(c), "{c}");
            }
        }
    }
}
