//! Session rules: client metadata and the title the server derives from it.

use serde_json::{Map, Value};

/// Largest serialised metadata object a session accepts.
pub const METADATA_MAX_BYTES: usize = 16 * 1024;
/// Longest title, in characters; longer titles are cut at a character boundary.
pub const TITLE_MAX_CHARS: usize = 200;

/// Client-supplied metadata: a JSON object of at most [`METADATA_MAX_BYTES`] when serialised.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionMetadata(Map<String, Value>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetadataError {
    #[error("metadata must be a JSON object")]
    NotAnObject,
    #[error("metadata must be at most {METADATA_MAX_BYTES} bytes when serialised")]
    TooLarge,
    #[error("metadata strings must not contain U+0000")]
    Nul,
    #[error("metadata numbers must lie within ±(2^53 − 1)")]
    NumberOutOfRange,
}

/// The largest metadata number: every integer up to it is exact in a double, and PostgreSQL
/// gives it back as written.
pub const METADATA_MAX_NUMBER: f64 = 9_007_199_254_740_991.0;

fn check_value(value: &Value) -> Result<(), MetadataError> {
    match value {
        Value::String(text) if text.contains('\0') => Err(MetadataError::Nul),
        Value::Number(number) if number.as_f64().is_none_or(|n| n.abs() > METADATA_MAX_NUMBER) => {
            Err(MetadataError::NumberOutOfRange)
        }
        Value::Array(items) => items.iter().try_for_each(check_value),
        Value::Object(members) => members.iter().try_for_each(|(name, member)| {
            if name.contains('\0') {
                return Err(MetadataError::Nul);
            }
            check_value(member)
        }),
        _ => Ok(()),
    }
}

impl SessionMetadata {
    pub fn parse(value: Value) -> Result<SessionMetadata, MetadataError> {
        let Value::Object(map) = value else {
            return Err(MetadataError::NotAnObject);
        };
        map.iter().try_for_each(|(name, member)| {
            if name.contains('\0') {
                return Err(MetadataError::Nul);
            }
            check_value(member)
        })?;
        let size = serde_json::to_vec(&map).map(|bytes| bytes.len()).unwrap_or(usize::MAX);
        if size > METADATA_MAX_BYTES {
            return Err(MetadataError::TooLarge);
        }
        Ok(SessionMetadata(map))
    }

    pub fn empty() -> SessionMetadata {
        SessionMetadata(Map::new())
    }

    /// The initial title: the metadata's `title` string, trimmed and cut to [`TITLE_MAX_CHARS`];
    /// none when absent or blank. Later issues replace it with one derived from the conversation.
    pub fn title(&self) -> Option<String> {
        let title = self.0.get("title")?.as_str()?.trim();
        (!title.is_empty()).then(|| title.chars().take(TITLE_MAX_CHARS).collect())
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_must_be_a_small_object() {
        assert_eq!(SessionMetadata::parse(json!([1])), Err(MetadataError::NotAnObject));
        assert_eq!(SessionMetadata::parse(json!(null)), Err(MetadataError::NotAnObject));
        let big = json!({ "blob": "x".repeat(METADATA_MAX_BYTES) });
        assert_eq!(SessionMetadata::parse(big), Err(MetadataError::TooLarge));
        assert!(SessionMetadata::parse(json!({ "client": "ios" })).is_ok());
    }

    #[test]
    fn metadata_holds_only_what_storage_gives_back() {
        assert_eq!(
            SessionMetadata::parse(json!({ "a": ["x\u{0}"] })),
            Err(MetadataError::Nul)
        );
        assert_eq!(SessionMetadata::parse(json!({ "a\u{0}": 1 })), Err(MetadataError::Nul));
        assert_eq!(
            SessionMetadata::parse(json!({ "n": { "deep": -2.3e204 } })),
            Err(MetadataError::NumberOutOfRange)
        );
        assert_eq!(
            SessionMetadata::parse(json!({ "n": 18_446_744_073_709_551_615u64 })),
            Err(MetadataError::NumberOutOfRange)
        );
        assert!(SessionMetadata::parse(json!({ "n": [9_007_199_254_740_991i64, -0.5, 2.2e-16] })).is_ok());
    }

    #[test]
    fn title_comes_from_metadata_when_given() {
        let meta = SessionMetadata::parse(json!({ "title": "  Trip planning " })).expect("valid");
        assert_eq!(meta.title().as_deref(), Some("Trip planning"));
        assert_eq!(
            SessionMetadata::parse(json!({ "title": " " })).expect("valid").title(),
            None
        );
        assert_eq!(
            SessionMetadata::parse(json!({ "title": 3 })).expect("valid").title(),
            None
        );
        let long = SessionMetadata::parse(json!({ "title": "é".repeat(300) })).expect("valid");
        assert_eq!(long.title().map(|t| t.chars().count()), Some(TITLE_MAX_CHARS));
    }
}
