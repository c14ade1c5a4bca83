//! The Web Push client (RFC 8030) for installed web clients: the payload encrypted to the
//! subscription's keys with `aes128gcm` (RFC 8291, by the `web-push-native` crate on RustCrypto
//! primitives) and a VAPID authorization (RFC 8292: an ES256 JWT signed here with `jsonwebtoken`,
//! the same signer as the APNs provider token, and the public key as `k`).
//!
//! The VAPID key is a P-256 key in PKCS#8 PEM, the format of the APNs `.p8` key. A JWT is signed
//! per push service (its `aud` is the endpoint's origin), valid for 12 hours and reused for one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::DecodePrivateKey;
use serde::Serialize;
use web_push_native::WebPushBuilder;

use crate::Sent;

/// How long a signed VAPID token is valid (RFC 8292 allows at most 24 hours).
pub const TOKEN_VALIDITY: Duration = Duration::from_secs(12 * 60 * 60);
/// How long a signed VAPID token is reused for one push service.
pub const TOKEN_REUSE: Duration = Duration::from_secs(60 * 60);
/// The largest payload one encrypted record carries: 4096 bytes less the `aes128gcm` header
/// (86 bytes with the 65-byte key id), the padding delimiter and the 16-byte tag.
pub const MAX_PAYLOAD_BYTES: usize = 3993;

#[derive(Clone)]
pub struct WebPushConfig {
    /// The VAPID signing key (P-256, PKCS#8 PEM).
    pub key_pem: Vec<u8>,
    /// The VAPID `sub`: a `mailto:` or `https:` contact for the push services' operators.
    pub subject: String,
    /// An extra trusted root certificate (PEM), for a TLS-inspecting proxy or a test server.
    pub extra_root_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for WebPushConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebPushConfig")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WebPushError {
    #[error("the VAPID key is not a P-256 PKCS#8 PEM private key")]
    Key,
    #[error("the VAPID subject must be a mailto: or https: address, got `{0}`")]
    Subject(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("cannot sign a VAPID token: {0}")]
    Sign(jsonwebtoken::errors::Error),
}

/// The application server key of a VAPID private key (PKCS#8 PEM): the uncompressed public
/// point, base64url without padding — what a browser subscribes with.
pub fn application_server_key(key_pem: &[u8]) -> Result<String, WebPushError> {
    let text = std::str::from_utf8(key_pem).map_err(|_| WebPushError::Key)?;
    let secret = p256::SecretKey::from_pkcs8_pem(text).map_err(|_| WebPushError::Key)?;
    Ok(URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes()))
}

/// How soon a push matters to the push service (RFC 8030 §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// An alert the owner should see now.
    High,
    /// A withdrawal: tidying that may wait for the device to wake.
    Normal,
}

/// One message to push.
#[derive(Clone, Debug)]
pub struct WebPushMessage {
    pub payload: Vec<u8>,
    pub urgency: Urgency,
    /// How long the push service keeps an undelivered message.
    pub ttl: Duration,
    /// Replaces an undelivered message with the same topic at the push service (at most 32
    /// base64url characters).
    pub topic: String,
}

#[derive(Serialize)]
struct Claims<'a> {
    aud: &'a str,
    exp: u64,
    sub: &'a str,
}

pub struct WebPush {
    key: EncodingKey,
    public_key: String,
    subject: String,
    http: reqwest::Client,
    /// Signed tokens by audience (a push service's origin), with when they were signed.
    tokens: Mutex<HashMap<String, (String, Instant)>>,
}

impl std::fmt::Debug for WebPush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebPush")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// A subscription's keys as the browser gives them: base64url, padded or not.
fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

impl WebPush {
    pub fn new(config: WebPushConfig) -> Result<WebPush, WebPushError> {
        if !(config.subject.starts_with("mailto:") || config.subject.starts_with("https://")) {
            return Err(WebPushError::Subject(config.subject));
        }
        let public_key = application_server_key(&config.key_pem)?;
        let key = EncodingKey::from_ec_pem(&config.key_pem).map_err(|_| WebPushError::Key)?;
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none());
        if let Some(pem) = &config.extra_root_pem {
            let certificate = reqwest::Certificate::from_pem(pem).map_err(WebPushError::Client)?;
            builder = builder.add_root_certificate(certificate);
        }
        let http = builder.build().map_err(WebPushError::Client)?;
        Ok(WebPush {
            key,
            public_key,
            subject: config.subject,
            http,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    /// The application server key browsers subscribe with.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// The VAPID token for a push service's origin, signed anew once older than [`TOKEN_REUSE`].
    pub fn vapid_token(&self, audience: &str) -> Result<String, WebPushError> {
        let mut tokens = self.tokens.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((token, signed)) = tokens.get(audience)
            && signed.elapsed() < TOKEN_REUSE
        {
            return Ok(token.clone());
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::ES256),
            &Claims {
                aud: audience,
                exp: now + TOKEN_VALIDITY.as_secs(),
                sub: &self.subject,
            },
            &self.key,
        )
        .map_err(WebPushError::Sign)?;
        tokens.insert(audience.to_owned(), (token.clone(), Instant::now()));
        Ok(token)
    }

    /// Pushes one message to one subscription.
    pub async fn send(
        &self,
        endpoint: &str,
        p256dh: &str,
        auth: &str,
        message: &WebPushMessage,
    ) -> Result<Sent, WebPushError> {
        // The API checked these at registration; a subscription that still does not parse can
        // never be pushed to.
        let Ok(url) = url::Url::parse(endpoint) else {
            return Ok(Sent::DeviceGone("InvalidEndpoint".into()));
        };
        let (Some(uri), Some(public), Some(auth)) = (
            endpoint.parse::<http::Uri>().ok(),
            decode(p256dh).and_then(|bytes| p256::PublicKey::from_sec1_bytes(&bytes).ok()),
            decode(auth).filter(|bytes| bytes.len() == 16),
        ) else {
            return Ok(Sent::DeviceGone("InvalidSubscription".into()));
        };
        let audience = url.origin().ascii_serialization();
        let request = WebPushBuilder::new(uri, public, web_push_native::Auth::clone_from_slice(&auth))
            .with_valid_duration(message.ttl)
            .build(message.payload.clone());
        let request = match request {
            Ok(request) => request,
            Err(error) => return Ok(Sent::Rejected(format!("cannot encrypt the payload: {error}"))),
        };
        let (parts, body) = request.into_parts();
        let authorization = format!("vapid t={}, k={}", self.vapid_token(&audience)?, self.public_key);
        let urgency = match message.urgency {
            Urgency::High => "high",
            Urgency::Normal => "normal",
        };
        let response = self
            .http
            .post(url)
            .headers(parts.headers)
            .header("authorization", authorization)
            .header("urgency", urgency)
            .header("topic", &message.topic)
            .body(body)
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(error = %error.without_url(), "push service unreachable");
                return Ok(Sent::Retry);
            }
        };
        let status = response.status().as_u16();
        Ok(match status {
            200..=299 => Sent::Delivered,
            // The subscription expired or was removed (RFC 8030 §7.3).
            404 | 410 => Sent::DeviceGone(format!("WebPush{status}")),
            429 | 500..=599 => Sent::Retry,
            _ => Sent::Rejected(format!("the push service answered {status}")),
        })
    }
}
