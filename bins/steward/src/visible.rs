//! Text from the server (model answers, questions, tool names and arguments, titles, email
//! fields) printed as text, never as commands to the terminal: every C0 and C1 control
//! character but line feed and tab, DEL, and every BiDi embedding, override and isolate is
//! shown as a visible stand-in. An escape sequence (CSI, OSC — hyperlinks (8) and the clipboard
//! (52) among them — DCS, APC, PM, SOS) cannot begin without ESC or its C1 introducer, so none
//! survives; its remaining characters show as the plain text they are.

use std::borrow::Cow;

/// Whether `char` must not reach a terminal as it is.
fn is_unsafe(char: char) -> bool {
    (char.is_control() && char != '\n' && char != '\t')
        || matches!(char, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `text` safe to print: unsafe characters replaced by a visible stand-in (C0 controls by their
/// Control Pictures, `␛` for ESC, the rest as `<U+XXXX>`); a CR before LF is dropped.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(char) = chars.next() {
        match char {
            '\r' if chars.peek() == Some(&'\n') => {}
            char if !is_unsafe(char) => out.push(char),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + u32::from(char)).unwrap_or('\u{FFFD}')),
            '\u{7f}' => out.push('\u{2421}'),
            char => out.push_str(&format!("<U+{:04X}>", u32::from(char))),
        }
    }
    Cow::Owned(out)
}

/// Serialized JSON safe to print: the characters [`visible`] replaces, which JSON allows raw in
/// strings (C1 controls, DEL, BiDi controls; serde_json already escapes C0), written as `\uXXXX`
/// escapes instead, so a script reads the same value.
pub fn json(serialized: &str) -> Cow<'_, str> {
    if !serialized.chars().any(is_unsafe) {
        return Cow::Borrowed(serialized);
    }
    let mut out = String::with_capacity(serialized.len() + 16);
    for char in serialized.chars() {
        if is_unsafe(char) {
            out.push_str(&format!("\\u{:04x}", u32::from(char)));
        } else {
            out.push(char);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No byte of `text` could start an escape sequence or a control function.
    fn assert_inert(text: &str) {
        for char in text.chars() {
            assert!(!is_unsafe(char), "{char:?} survived in {text:?}");
        }
        assert!(!text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{9d}'));
    }

    #[test]
    fn csi_sequences_are_shown_not_obeyed() {
        let text = visible("before\u{1b}[2J\u{1b}[Hafter \u{9b}31mred");
        assert_inert(&text);
        assert_eq!(text, "before␛[2J␛[Hafter <U+009B>31mred");
    }

    #[test]
    fn osc_hyperlinks_and_clipboard_writes_are_shown_not_obeyed() {
        let clipboard = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}";
        let link = "\u{1b}]8;;https://evil.example\u{1b}\\click\u{1b}]8;;\u{1b}\\";
        let c1 = "\u{9d}52;c;cm0gLXJmIH4=\u{9c}";
        for sequence in [clipboard, link, c1] {
            assert_inert(&visible(sequence));
        }
        assert_eq!(visible(clipboard), "␛]52;c;cm0gLXJmIH4=␇");
    }

    #[test]
    fn dcs_apc_pm_and_sos_are_shown_not_obeyed() {
        for sequence in [
            "\u{1b}P1$r\u{1b}\\",
            "\u{1b}_Gf=100;AAAA\u{1b}\\",
            "\u{1b}^private\u{1b}\\",
            "\u{1b}Xstring\u{1b}\\",
            "\u{90}dcs\u{9c}",
            "\u{9f}apc\u{9c}",
            "\u{9e}pm\u{9c}",
            "\u{98}sos\u{9c}",
        ] {
            assert_inert(&visible(sequence));
        }
    }

    #[test]
    fn other_controls_and_bidi_overrides_are_shown() {
        let text = visible("bell\u{7} back\u{8}space\rline\u{7f} \u{202E}txt.exe\u{202C} \u{2066}iso\u{2069}");
        assert_inert(&text);
        assert_eq!(
            text,
            "bell␇ back␈space␍line␡ <U+202E>txt.exe<U+202C> <U+2066>iso<U+2069>"
        );
    }

    #[test]
    fn text_lines_and_tabs_are_kept() {
        let text = "# Title\n\n- one\n\tindented, **bold** café 日本語\r\nnext";
        assert_eq!(
            visible(text),
            "# Title\n\n- one\n\tindented, **bold** café 日本語\nnext"
        );
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_keeps_its_value_and_escapes_what_is_unsafe() {
        let value = serde_json::json!({"title": "a\u{9b}2Jb\u{202E}c\u{1b}[0m"});
        let serialized = serde_json::to_string_pretty(&value).expect("json");
        let safe = json(&serialized);
        assert_inert(&safe);
        let read: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(read, value);
    }
}
