//! Rules for the text a client sends, each paired with the JSON Schema pattern (ECMA-262) that
//! states the same rule, so the OpenAPI document calls valid exactly what the server accepts.
//!
//! "Control" is Unicode's general category Cc (`char::is_control`); "whitespace" is Unicode's
//! White_Space property (`char::is_whitespace`), spelled out in the patterns. No text may hold
//! U+0000: PostgreSQL cannot store it.

/// Any text without U+0000.
pub const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";

/// A name or title: no control character, and at least one character that is not whitespace.
pub const VISIBLE_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u001f\u007f-\u009f]*$";

/// Free text (a message, an answer, an instruction): line breaks and tabs allowed, no U+0000, and
/// at least one character that is not whitespace.
pub const SOME_TEXT_PATTERN: &str =
    r"^[^\u0000]*[^\u0000\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000]*$";

/// Visible ASCII (`!` to `~`), as in header values such as `Idempotency-Key`.
pub const VISIBLE_ASCII_PATTERN: &str = r"^[\u0021-\u007e]+$";

pub fn has_no_nul(text: &str) -> bool {
    !text.contains('\0')
}

/// [`VISIBLE_PATTERN`].
pub fn is_visible(text: &str) -> bool {
    !text.chars().any(char::is_control) && text.chars().any(|c| !c.is_whitespace())
}

/// [`SOME_TEXT_PATTERN`].
pub fn is_some_text(text: &str) -> bool {
    has_no_nul(text) && text.chars().any(|c| !c.is_whitespace())
}

/// [`VISIBLE_ASCII_PATTERN`].
pub fn is_visible_ascii(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every whitespace character Rust knows is in the patterns' whitespace list, and no other.
    #[test]
    fn the_patterns_whitespace_is_unicodes() {
        let listed = |c: char| {
            matches!(c, '\u{9}'..='\u{d}' | ' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
                | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
        };
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(c.is_whitespace(), listed(c), "{:?}", c);
            assert_eq!(
                c.is_control(),
                matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'),
                "{:?}",
                c
            );
        }
        assert!(VISIBLE_PATTERN.contains(r"\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"));
        assert!(SOME_TEXT_PATTERN.contains(r"\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028"));
    }

    #[test]
    fn rules() {
        assert!(is_visible("Trips") && is_visible(" a ") && is_visible("é"));
        assert!(!is_visible("") && !is_visible(" \u{3000}") && !is_visible("a\tb") && !is_visible("a\u{85}"));
        assert!(is_some_text("line\nnext") && is_some_text("\u{1}"));
        assert!(!is_some_text("\n \t") && !is_some_text("a\0"));
        assert!(is_visible_ascii("key-1") && !is_visible_ascii("a b") && !is_visible_ascii(""));
    }
}
