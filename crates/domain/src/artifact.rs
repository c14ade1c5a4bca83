//! Artifact rules: file names, strong entity tags and conditional reads.

/// A file name as shown to the owner: 1 to 255 bytes, no control characters, no path separators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactName(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArtifactNameError {
    #[error("file name must not be blank")]
    Blank,
    #[error("file name must be at most 255 bytes")]
    TooLong,
    #[error("file name must not contain control characters or path separators")]
    Forbidden,
}

impl ArtifactName {
    pub fn parse(text: &str) -> Result<ArtifactName, ArtifactNameError> {
        if text.trim().is_empty() {
            return Err(ArtifactNameError::Blank);
        }
        if text.chars().count() > 255 {
            return Err(ArtifactNameError::TooLong);
        }
        if text.chars().any(|c| c.is_control() || c == '/' || c == '\\') || text == "." || text == ".." {
            return Err(ArtifactNameError::Forbidden);
        }
        Ok(ArtifactName(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The strong entity tag of an artifact's bytes: the quoted lowercase hex SHA-256 of the content.
pub fn strong_etag(sha256_hex: &str) -> String {
    format!("\"{sha256_hex}\"")
}

/// Whether an `If-None-Match` header value matches the current entity tag, using the weak
/// comparison RFC 9110 section 13.1.2 prescribes for this header (`W/` prefixes are ignored).
pub fn if_none_match_matches(header: &str, current_etag: &str) -> bool {
    let current = current_etag.trim_start_matches("W/");
    header
        .split(',')
        .map(str::trim)
        .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refuse_paths_and_controls() {
        assert!(ArtifactName::parse("report 2026.pdf").is_ok());
        assert_eq!(ArtifactName::parse(" "), Err(ArtifactNameError::Blank));
        assert_eq!(ArtifactName::parse("../etc/passwd"), Err(ArtifactNameError::Forbidden));
        assert_eq!(ArtifactName::parse("a\nb"), Err(ArtifactNameError::Forbidden));
        assert_eq!(ArtifactName::parse(&"a".repeat(256)), Err(ArtifactNameError::TooLong));
    }

    #[test]
    fn conditional_matching_follows_rfc_9110() {
        let etag = strong_etag("abc");
        assert_eq!(etag, "\"abc\"");
        assert!(if_none_match_matches("\"abc\"", &etag));
        assert!(if_none_match_matches("W/\"abc\"", &etag));
        assert!(if_none_match_matches("\"x\", \"abc\"", &etag));
        assert!(if_none_match_matches("*", &etag));
        assert!(!if_none_match_matches("\"abd\"", &etag));
        assert!(!if_none_match_matches("abc", &etag));
    }
}
