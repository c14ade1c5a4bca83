//! Showing an answer as it streams: text is held until a Markdown block is complete (a blank
//! line outside a code fence), then the block is rendered for the terminal (`termimad`) or, when
//! standard output is not a terminal, written as it came.

use std::io::Write;

/// The line saying an approval argument was cut for display, and what proves its whole value.
pub fn cut_note(pointer: &str, digest: &str) -> String {
    format!("  {pointer} is shown to its first 512 characters; the whole text has SHA-256 {digest}")
}

/// What an approval approves, as the owner reads it: a mail send or draft of any account as a
/// message (recipients, subject, then the body as text, every line of it), any other tool's
/// arguments as JSON. Printed through [`crate::visible`].
pub fn approval_text(tool: &str, arguments: &serde_json::Value) -> String {
    use domain::mail_tools::{MailOperation, operation_of};
    let message = matches!(
        operation_of(tool),
        Some(MailOperation::SendMessage | MailOperation::CreateDraft)
    );
    let pretty = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let Some(members) = arguments.as_object().filter(|_| message) else {
        return pretty(arguments);
    };
    let text = |name: &str| match members.get(name) {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) => Some(text.clone()),
        Some(serde_json::Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| item.as_str().map_or_else(|| item.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Some(other) => Some(other.to_string()),
    };
    let mut out = String::new();
    for (name, label) in [("to", "To"), ("cc", "Cc"), ("bcc", "Bcc"), ("subject", "Subject")] {
        if let Some(value) = text(name) {
            out.push_str(&format!("  {label}: {value}\n"));
        }
    }
    let rest: serde_json::Map<String, serde_json::Value> = members
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "to" | "cc" | "bcc" | "subject" | "body"))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if !rest.is_empty() {
        out.push_str(&format!("  Also: {}\n", serde_json::Value::Object(rest)));
    }
    out.push_str("  Body:\n");
    for line in text("body").unwrap_or_default().lines() {
        out.push_str(&format!("    {line}\n"));
    }
    out.push_str("  (end of body)");
    out
}

/// An answer being written, one step at a time.
pub struct Answer {
    skin: Option<termimad::MadSkin>,
    /// Text received for the current step.
    text: String,
    /// How much of `text` has been shown.
    shown: usize,
}

impl Answer {
    /// `styled`: render Markdown for a terminal; otherwise plain text.
    pub fn new(styled: bool) -> Answer {
        Answer {
            skin: styled.then(termimad::MadSkin::default),
            text: String::new(),
            shown: 0,
        }
    }

    /// A piece of the answer arrived.
    pub fn delta(&mut self, piece: &str) {
        self.text.push_str(piece);
        if let Some(end) = complete_blocks(&self.text[self.shown..]) {
            let start = self.shown;
            self.show(start, start + end);
        }
    }

    /// The step's whole text, as stored: what the pieces missed is shown now, and the step ends.
    pub fn finish(&mut self, whole: &str) {
        let start = if whole.is_char_boundary(self.shown) && whole[..self.shown] == self.text[..self.shown] {
            self.shown
        } else {
            // Pieces were lost or differ: show the stored text from its start.
            0
        };
        self.text = whole.to_owned();
        self.show(start, whole.len());
        self.text.clear();
        self.shown = 0;
    }

    fn show(&mut self, start: usize, end: usize) {
        if let Some(rendered) = self.rendered(&self.text[start..end]) {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{rendered}");
            let _ = out.flush();
        }
        self.shown = end;
    }

    /// `block` as written to the terminal, if it holds anything. Markdown is rendered from the
    /// text made visible: the answer's own control characters never reach the terminal, only
    /// the renderer's styling.
    fn rendered(&self, block: &str) -> Option<String> {
        let block = crate::visible::visible(block);
        if block.trim().is_empty() {
            return None;
        }
        let block = block.trim_end_matches('\n');
        Some(match &self.skin {
            Some(skin) => skin.term_text(block).to_string(),
            None => format!("{block}\n"),
        })
    }
}

/// The end of the last complete block in `text` (just after a blank line outside a fenced code
/// block), if any.
fn complete_blocks(text: &str) -> Option<usize> {
    let mut fenced = false;
    let mut end = None;
    let mut offset = 0;
    let mut previous_blank = false;
    for line in text.split_inclusive('\n') {
        let complete = line.ends_with('\n');
        let trimmed = line.trim();
        if complete && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            fenced = !fenced;
            if !fenced {
                // A closed fence ends its block.
                end = Some(offset + line.len());
            }
        } else if complete && !fenced && trimmed.is_empty() && !previous_blank && offset > 0 {
            end = Some(offset + line.len());
        }
        previous_blank = trimmed.is_empty();
        offset += line.len();
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_complete_after_a_blank_line_outside_a_fence() {
        assert_eq!(complete_blocks("Hello, wor"), None);
        assert_eq!(complete_blocks("Hello.\n\nNext"), Some(8));
        assert_eq!(complete_blocks("```rust\nfn main() {\n\n"), None, "inside a fence");
        let fenced = "```\ncode\n\nmore\n```\nafter";
        assert_eq!(complete_blocks(fenced), Some(fenced.len() - "after".len()));
        assert_eq!(complete_blocks("- a\n- b\n\n- c"), Some(9));
    }

    #[test]
    fn an_answers_escape_sequences_are_shown_as_text_in_both_renderings() {
        let hostile = "**Done.** \u{1b}]52;c;cm0gLXJmIH4=\u{7} \u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{1b}[2J \u{9b}31m \u{90}q\u{9c} \u{9f}x\u{9c} \u{202E}gnp.exe";
        for styled in [true, false] {
            let rendered = Answer::new(styled).rendered(hostile).expect("something to show");
            assert!(!rendered.contains("\u{1b}]"), "an OSC sequence survived: {rendered:?}");
            assert!(!rendered.contains("\u{1b}[2J") && !rendered.contains("\u{1b}P") && !rendered.contains("\u{1b}_"));
            assert!(
                !rendered
                    .chars()
                    .any(|c| ('\u{80}'..='\u{9f}').contains(&c) || c == '\u{202E}'),
                "{rendered:?}"
            );
            assert!(rendered.contains("␛]52;c;cm0gLXJmIH4=␇"), "{rendered:?}");
        }
    }

    #[test]
    fn a_send_reads_as_a_message_with_every_line_of_its_body() {
        let body: String = (1..=60).map(|n| format!("Line {n} of the body.\n")).collect::<String>() + "LAST LINE";
        let arguments = serde_json::json!({
            "account_id": "work",
            "to": ["ada@example.org", "bob@example.org"],
            "cc": "carol@example.org",
            "subject": "Your report",
            "body": body,
        });
        let text = approval_text("mcp.mail_work_send.send_message", &arguments);
        assert!(text.contains("  To: ada@example.org, bob@example.org\n"), "{text}");
        assert!(text.contains("  Cc: carol@example.org\n"), "{text}");
        assert!(text.contains("  Subject: Your report\n"), "{text}");
        assert!(text.contains("  Also: {\"account_id\":\"work\"}\n"), "{text}");
        assert!(
            text.contains("    Line 1 of the body.\n") && text.contains("    LAST LINE\n  (end of body)"),
            "{text}"
        );
        let draft = approval_text("mcp.mail_write.create_draft", &arguments);
        assert!(draft.contains("    LAST LINE\n"), "{draft}");
        // Anything else stays JSON.
        let other = approval_text("notes.add", &serde_json::json!({"text": "milk"}));
        assert_eq!(other, "{\n  \"text\": \"milk\"\n}");
    }

    #[test]
    fn the_stored_text_fills_in_what_the_pieces_missed() {
        let mut answer = Answer::new(false);
        answer.delta("First paragraph.\n\nSecond ");
        assert_eq!(answer.shown, "First paragraph.\n\n".len());
        answer.finish("First paragraph.\n\nSecond paragraph.");
        assert_eq!((answer.shown, answer.text.as_str()), (0, ""));
    }
}
