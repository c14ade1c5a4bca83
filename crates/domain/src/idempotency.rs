//! Idempotency keys: a client's name for one logical request, reused across its retries.

/// 1 to 255 visible ASCII characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("Idempotency-Key must be 1 to 255 visible ASCII characters")]
pub struct IdempotencyKeyError;

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<IdempotencyKey, IdempotencyKeyError> {
        let valid = !text.is_empty() && text.len() <= 255 && text.bytes().all(|b| (0x21..=0x7e).contains(&b));
        valid
            .then(|| IdempotencyKey(text.to_owned()))
            .ok_or(IdempotencyKeyError)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii() {
        assert!(IdempotencyKey::parse("msg-0b6d5e1c").is_ok());
        assert!(IdempotencyKey::parse("").is_err());
        assert!(IdempotencyKey::parse("has space").is_err());
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_err());
    }
}
