//! Folder names.

/// A folder's display name: trimmed, 1 to 100 characters, no control characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderName(String);

pub const FOLDER_NAME_MAX_CHARS: usize = 100;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FolderNameError {
    #[error("folder name must not be blank")]
    Blank,
    #[error("folder name must be at most {FOLDER_NAME_MAX_CHARS} characters")]
    TooLong,
    #[error("folder name must not contain control characters")]
    ControlCharacter,
}

impl FolderName {
    pub fn parse(text: &str) -> Result<FolderName, FolderNameError> {
        // The length counts what was sent, as the schema's `maxLength` does.
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(FolderNameError::Blank);
        }
        if text.chars().count() > FOLDER_NAME_MAX_CHARS {
            return Err(FolderNameError::TooLong);
        }
        if text.chars().any(char::is_control) {
            return Err(FolderNameError::ControlCharacter);
        }
        Ok(FolderName(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_and_validates() {
        assert_eq!(
            FolderName::parse("  Travel ").map(|n| n.as_str().to_owned()),
            Ok("Travel".into())
        );
        assert_eq!(FolderName::parse("   "), Err(FolderNameError::Blank));
        assert_eq!(FolderName::parse(&"x".repeat(101)), Err(FolderNameError::TooLong));
        assert!(FolderName::parse(&"é".repeat(100)).is_ok());
        assert_eq!(FolderName::parse("a\u{7}b"), Err(FolderNameError::ControlCharacter));
    }
}
