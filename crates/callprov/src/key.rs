//! Where the call provider is and its API key: `CALLPROV_BASE_URL` and the owner-only file
//! `CALLPROV_API_KEY_FILE`. An inline `CALLPROV_API_KEY` is refused (the roles also refuse it
//! before they read anything, `hardening::environment`), and the key never appears in a
//! message, a log line or a `Debug` output.

use std::path::Path;

use hardening::secret_file::SecretFileError;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{variable} is invalid: {reason}")]
    Invalid { variable: &'static str, reason: String },
    #[error("{0} is required with calling on")]
    Missing(&'static str),
    #[error("CALLPROV_API_KEY_FILE: {0}")]
    File(#[from] SecretFileError),
}

/// The provider's API key.
#[derive(Clone)]
pub struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

impl ApiKey {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

/// The provider's address and key.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// `https://…` without a trailing slash (`http://` only for a loopback stand-in).
    pub base_url: String,
    pub key: ApiKey,
}

fn is_loopback_http(url: &str) -> bool {
    url.strip_prefix("http://").is_some_and(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        // `user@host` would send the key elsewhere: no userinfo at all.
        if authority.contains('@') {
            return false;
        }
        let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
        matches!(host, "127.0.0.1" | "localhost" | "[::1]")
    })
}

impl Endpoint {
    /// Reads `CALLPROV_BASE_URL` and the key file named by `CALLPROV_API_KEY_FILE`; both are
    /// required. An inline `CALLPROV_API_KEY` is refused.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Endpoint, KeyError> {
        let get = |name: &str| get(name).filter(|value| !value.trim().is_empty());
        if get("CALLPROV_API_KEY").is_some() {
            return Err(KeyError::Invalid {
                variable: "CALLPROV_API_KEY",
                reason: "an inline key is refused; put it in a file named by CALLPROV_API_KEY_FILE".into(),
            });
        }
        let base_url = get("CALLPROV_BASE_URL").ok_or(KeyError::Missing("CALLPROV_BASE_URL"))?;
        if !(base_url.starts_with("https://") || is_loopback_http(&base_url)) {
            return Err(KeyError::Invalid {
                variable: "CALLPROV_BASE_URL",
                reason: "must be an https URL (plain http only on loopback)".into(),
            });
        }
        let path = get("CALLPROV_API_KEY_FILE").ok_or(KeyError::Missing("CALLPROV_API_KEY_FILE"))?;
        let bytes = hardening::secret_file::read_owner_only(Path::new(&path))?;
        let key = String::from_utf8(bytes)
            .ok()
            .map(|key| key.trim().to_owned())
            .filter(|key| !key.is_empty() && key.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or(KeyError::Invalid {
                variable: "CALLPROV_API_KEY_FILE",
                reason: "the key must be one line of printable ASCII".into(),
            })?;
        Ok(Endpoint {
            base_url: base_url.trim_end_matches('/').to_owned(),
            key: ApiKey(key),
        })
    }
}
