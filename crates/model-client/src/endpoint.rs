//! Where the OpenAI-compatible API is, and its key: `OPENAI_BASE_URL` and the owner-only
//! `OPENAI_API_KEY_FILE`; an inline `OPENAI_API_KEY` is refused.

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("{variable} is invalid: {reason}")]
    Invalid { variable: &'static str, reason: String },
    #[error("OPENAI_API_KEY_FILE: {0}")]
    KeyFile(#[from] hardening::secret_file::SecretFileError),
}

/// The OpenAI-compatible endpoint, when configured.
#[derive(Clone)]
pub struct OpenAiEndpoint {
    pub base_url: String,
    pub api_key: Option<String>,
}

impl std::fmt::Debug for OpenAiEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEndpoint")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// The endpoint an environment configures, shared by every role that calls a model.
pub fn openai_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<OpenAiEndpoint>, EndpointError> {
    let openai = match get("OPENAI_BASE_URL") {
        None => {
            if get("OPENAI_API_KEY_FILE").is_some() {
                return Err(EndpointError::Invalid {
                    variable: "OPENAI_API_KEY_FILE",
                    reason: "set OPENAI_BASE_URL as well".into(),
                });
            }
            None
        }
        Some(base_url) => {
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                return Err(EndpointError::Invalid {
                    variable: "OPENAI_BASE_URL",
                    reason: "must be an http(s) URL".into(),
                });
            }
            let api_key = match get("OPENAI_API_KEY_FILE") {
                None => None,
                Some(path) => {
                    let bytes = hardening::secret_file::read_owner_only(std::path::Path::new(&path))?;
                    let key = String::from_utf8(bytes).map_err(|_| EndpointError::Invalid {
                        variable: "OPENAI_API_KEY_FILE",
                        reason: "not UTF-8".into(),
                    })?;
                    Some(key.trim().to_owned())
                }
            };
            Some(OpenAiEndpoint {
                base_url: base_url.trim_end_matches('/').to_owned(),
                api_key,
            })
        }
    };
    if get("OPENAI_API_KEY").is_some() {
        return Err(EndpointError::Invalid {
            variable: "OPENAI_API_KEY",
            reason: "inline keys are refused; put the key in a file named by OPENAI_API_KEY_FILE".into(),
        });
    }
    Ok(openai)
}
