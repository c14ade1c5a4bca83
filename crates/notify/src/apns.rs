//! The APNs HTTP/2 client with ES256 provider tokens.
//!
//! The provider token (JWT: `kid` = key id, `iss` = team id, `iat`) is signed with the `.p8` key
//! and reused for 40 minutes (APNs accepts 20–60). Pushes go to the sandbox or production host
//! by the device's environment.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;
use store::{DeviceTarget, PushAddress};

/// How long a provider token is reused.
pub const TOKEN_REUSE: Duration = Duration::from_secs(40 * 60);

#[derive(Clone)]
pub struct ApnsConfig {
    pub team_id: String,
    pub key_id: String,
    /// The `.p8` signing key (PKCS#8 PEM).
    pub key_pem: Vec<u8>,
    /// The app's bundle id (`apns-topic`).
    pub topic: String,
    pub sandbox_url: String,
    pub production_url: String,
    /// An extra trusted root certificate (PEM), for a TLS-inspecting proxy or a test server.
    pub extra_root_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for ApnsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApnsConfig")
            .field("team_id", &self.team_id)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApnsError {
    #[error("the APNs signing key is not an ES256 PKCS#8 PEM key: {0}")]
    Key(jsonwebtoken::errors::Error),
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("cannot sign a provider token: {0}")]
    Sign(jsonwebtoken::errors::Error),
}

/// What kind of push: an alert, or a silent background push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushType {
    Alert,
    Background,
}

/// One push to send.
#[derive(Clone, Debug)]
pub struct Push {
    pub payload: Vec<u8>,
    pub push_type: PushType,
    /// Replaces an earlier alert with the same id on the device.
    pub collapse_id: String,
}

pub use crate::Sent;

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: u64,
}

pub struct Apns {
    config: ApnsConfig,
    key: EncodingKey,
    http: reqwest::Client,
    token: Mutex<Option<(String, Instant)>>,
}

impl std::fmt::Debug for Apns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Apns")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Apns {
    pub fn new(config: ApnsConfig) -> Result<Apns, ApnsError> {
        let key = EncodingKey::from_ec_pem(&config.key_pem).map_err(ApnsError::Key)?;
        let mut builder = reqwest::Client::builder()
            .http2_prior_knowledge()
            .timeout(Duration::from_secs(30));
        if let Some(pem) = &config.extra_root_pem {
            let certificate = reqwest::Certificate::from_pem(pem).map_err(ApnsError::Client)?;
            builder = builder.add_root_certificate(certificate);
        }
        let http = builder.build().map_err(ApnsError::Client)?;
        Ok(Apns {
            config,
            key,
            http,
            token: Mutex::new(None),
        })
    }

    /// The current provider token, signed anew once it is older than [`TOKEN_REUSE`].
    pub fn provider_token(&self) -> Result<String, ApnsError> {
        let mut cached = self.token.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((token, issued)) = cached.as_ref()
            && issued.elapsed() < TOKEN_REUSE
        {
            return Ok(token.clone());
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.config.key_id.clone());
        let iat = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let token = jsonwebtoken::encode(
            &header,
            &Claims {
                iss: &self.config.team_id,
                iat,
            },
            &self.key,
        )
        .map_err(ApnsError::Sign)?;
        *cached = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    pub async fn send(&self, device: &DeviceTarget, push: &Push) -> Result<Sent, ApnsError> {
        let PushAddress::Apns { token, environment } = &device.address else {
            return Ok(Sent::Rejected("not an APNs device".into()));
        };
        let host = if environment == "production" {
            &self.config.production_url
        } else {
            &self.config.sandbox_url
        };
        let (push_type, priority) = match push.push_type {
            PushType::Alert => ("alert", "10"),
            PushType::Background => ("background", "5"),
        };
        let response = self
            .http
            .post(format!("{}/3/device/{}", host.trim_end_matches('/'), token))
            .header("authorization", format!("bearer {}", self.provider_token()?))
            .header("apns-topic", &self.config.topic)
            .header("apns-push-type", push_type)
            .header("apns-priority", priority)
            .header("apns-collapse-id", &push.collapse_id)
            .header("content-type", "application/json")
            .body(push.payload.clone())
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(error = %error.without_url(), "APNs unreachable");
                return Ok(Sent::Retry);
            }
        };
        let status = response.status().as_u16();
        if status == 200 {
            return Ok(Sent::Delivered);
        }
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        let reason = body["reason"].as_str().unwrap_or("unknown").to_owned();
        Ok(match (status, reason.as_str()) {
            (410, _) | (400, "BadDeviceToken") | (400, "DeviceTokenNotForTopic") => Sent::DeviceGone(reason),
            (429, _) | (500..=599, _) => Sent::Retry,
            _ => Sent::Rejected(reason),
        })
    }
}
