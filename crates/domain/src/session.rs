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
}

impl SessionMetadata {
    pub fn parse(value: Value) -> Result<SessionMetadata, MetadataError> {
        let Value::Object(map) = value else {
            return Err(MetadataError::NotAnObject);
        };
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
