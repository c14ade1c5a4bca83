//! Mail tool names and scopes, derived from the connected accounts' ids, so the API (which
//! composes an agent's roster and pins it in the agent version) and the worker (which runs the
//! tools with the credentials) always agree.
//!
//! The default account's tools are `mcp.mail_read.*`, `mcp.mail_write.*` and `mcp.mail_send.*`;
//! a named account that is not the default gets `mcp.mail_<account_id>_read.*` and so on. Each
//! tool's scope is its prefix with `.use` (`mcp.mail_read.use`, `mcp.mail_work_send.use`). The
//! contract names the read and write scopes; the send scope `mcp.mail_send.use` is this
//! project's choice, following the same rule.

use crate::manifest::AccountIds;

/// Which of an account's three credential documents a tool uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MailCapability {
    Read,
    Write,
    Send,
}

impl MailCapability {
    pub const fn as_str(self) -> &'static str {
        match self {
            MailCapability::Read => "read",
            MailCapability::Write => "write",
            MailCapability::Send => "send",
        }
    }
}

/// The mail tools' operations. None downloads an attachment or deletes anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MailOperation {
    /// Searches threads with a provider query (`in:drafts subject:"…"`); no approval.
    SearchThreads,
    /// Lists the mailbox's labels; no approval.
    ListLabels,
    /// Creates one unsent draft; approval required.
    CreateDraft,
    /// Sends one message; approval required.
    SendMessage,
}

impl MailOperation {
    pub const ALL: [MailOperation; 4] = [
        MailOperation::SearchThreads,
        MailOperation::ListLabels,
        MailOperation::CreateDraft,
        MailOperation::SendMessage,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            MailOperation::SearchThreads => "search_threads",
            MailOperation::ListLabels => "list_labels",
            MailOperation::CreateDraft => "create_draft",
            MailOperation::SendMessage => "send_message",
        }
    }

    pub fn parse(text: &str) -> Option<MailOperation> {
        MailOperation::ALL
            .into_iter()
            .find(|operation| operation.as_str() == text)
    }

    pub const fn capability(self) -> MailCapability {
        match self {
            MailOperation::SearchThreads | MailOperation::ListLabels => MailCapability::Read,
            MailOperation::CreateDraft => MailCapability::Write,
            MailOperation::SendMessage => MailCapability::Send,
        }
    }

    /// Whether the operation changes the mailbox or sends (and so needs the owner's approval and
    /// is never repeated after an uncertain outcome).
    pub const fn has_effect(self) -> bool {
        !matches!(self.capability(), MailCapability::Read)
    }
}

/// One mail tool of one account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailTool {
    /// `mcp.mail_read.search_threads`, `mcp.mail_work_send.send_message`, …
    pub name: String,
    /// `mcp.mail_read.use`, `mcp.mail_work_send.use`, …
    pub scope: String,
    pub account_id: String,
    pub operation: MailOperation,
}

/// The prefix of an account's tools for one capability.
fn prefix(account_id: &str, default_account: &str, capability: MailCapability) -> String {
    if account_id == default_account {
        format!("mcp.mail_{}", capability.as_str())
    } else {
        format!("mcp.mail_{account_id}_{}", capability.as_str())
    }
}

/// The scope that grants `capability` on `account_id`.
pub fn scope(account_id: &str, default_account: &str, capability: MailCapability) -> String {
    format!("{}.use", prefix(account_id, default_account, capability))
}

/// The server-use scopes the accounts make available to schedules: every account's mail read
/// and write use scopes (`mcp.mail_read.use`, `mcp.mail_work_write.use`, …). Sending is never
/// derivable: a schedule cannot send.
pub fn derivable_scopes(accounts: &AccountIds) -> Vec<String> {
    accounts
        .accounts
        .iter()
        .flat_map(|account| {
            [MailCapability::Read, MailCapability::Write]
                .map(|capability| scope(account, &accounts.default_account, capability))
        })
        .collect()
}

/// Whether `requested` scopes can be granted to a schedule's run, given the connected accounts
/// (`None` when mail is not enabled).
pub fn authorize(requested: &[String], accounts: Option<&AccountIds>) -> bool {
    let available = accounts.map(derivable_scopes).unwrap_or_default();
    requested.iter().all(|scope| available.contains(scope))
}

/// Every mail tool of the connected accounts: the default account first, then the others in
/// manifest order; per account read, write, send.
pub fn tools(accounts: &AccountIds) -> Vec<MailTool> {
    let default = accounts.default_account.as_str();
    let ordered =
        std::iter::once(default).chain(accounts.accounts.iter().map(String::as_str).filter(|id| *id != default));
    ordered
        .flat_map(|account_id| {
            MailOperation::ALL.into_iter().map(move |operation| {
                let prefix = prefix(account_id, default, operation.capability());
                MailTool {
                    name: format!("{prefix}.{}", operation.as_str()),
                    scope: format!("{prefix}.use"),
                    account_id: account_id.to_owned(),
                    operation,
                }
            })
        })
        .collect()
}

/// The operation a mail tool of any account performs, read from its name
/// (`mcp.mail_<capability>.<operation>` or `mcp.mail_<account>_<capability>.<operation>`, the
/// capability being the operation's own); `None` for any other name.
pub fn operation_of(tool: &str) -> Option<MailOperation> {
    let (prefix, operation) = tool.strip_prefix("mcp.mail_")?.split_once('.')?;
    let operation = MailOperation::parse(operation)?;
    let capability = operation.capability().as_str();
    let of_account = prefix
        .strip_suffix(capability)
        .is_some_and(|account| account.is_empty() || (account.ends_with('_') && account.len() > 1));
    of_account.then_some(operation)
}

/// The longest subject (RFC 5322's line length) and body a write or send takes.
pub const MAX_SUBJECT_CHARS: usize = 998;
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Invisible formatting characters (Unicode category Cf, the ones in use): they can reorder or
/// hide text, so an approval could show one thing and the message say another.
pub fn is_format_character(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// One address as a write or send takes it: plain ASCII `local@domain`, no display name,
/// nothing that could break out of a header or look like another address.
pub fn sendable_address(text: &str) -> Option<String> {
    let text = text.trim();
    if !text.is_ascii() {
        return None;
    }
    let (local, domain) = text.split_once('@')?;
    let forbidden = |c: char| c.is_whitespace() || c.is_control() || "<>,;:\"()[]\\@".contains(c);
    let valid = !local.is_empty()
        && local.len() <= 64
        && !domain.is_empty()
        && domain.len() <= 253
        && domain.contains('.')
        && !local.chars().any(forbidden)
        && !domain.chars().any(forbidden)
        && !domain.starts_with('.')
        && !domain.ends_with('.');
    valid.then(|| text.to_owned())
}

/// A subject as a write or send takes it: one line, no invisible formatting, at most
/// [`MAX_SUBJECT_CHARS`] characters.
pub fn check_subject(subject: &str) -> Result<(), String> {
    if subject.chars().any(char::is_control) {
        return Err("`subject` must be one line".into());
    }
    if subject.chars().any(is_format_character) {
        return Err("`subject` holds invisible formatting characters".into());
    }
    if subject.chars().count() > MAX_SUBJECT_CHARS {
        return Err(format!("`subject` is longer than {MAX_SUBJECT_CHARS} characters"));
    }
    Ok(())
}

/// A body as a write or send takes it: no invisible formatting, at most 1 MiB.
pub fn check_body(body: &str) -> Result<(), String> {
    if body.len() > MAX_BODY_BYTES {
        return Err("`body` is larger than 1 MiB".into());
    }
    if body.chars().any(is_format_character) {
        return Err("`body` holds invisible formatting characters".into());
    }
    Ok(())
}

impl DraftMessage<'_> {
    /// Why the send tool would refuse this message, checked before it is frozen: the same
    /// rules it applies (recipients, subject, body), so no approval is asked for a message that
    /// cannot be sent.
    pub fn unsendable(&self) -> Option<String> {
        let recipients = self
            .to
            .iter()
            .map(|address| ("to", address))
            .chain(self.cc.iter().map(|address| ("cc", address)));
        for (field, address) in recipients {
            if sendable_address(address).is_none() {
                return Some(format!(
                    "`{field}` holds `{address}`, which is not a plain ASCII address"
                ));
            }
        }
        check_subject(self.subject).and_then(|()| check_body(self.body)).err()
    }
}

/// The `send_message` tool of `account_id`, when it is one of `accounts`.
pub fn send_tool(accounts: &AccountIds, account_id: &str) -> Option<MailTool> {
    tools(accounts)
        .into_iter()
        .find(|tool| tool.account_id == account_id && tool.operation == MailOperation::SendMessage)
}

/// A frozen draft as the `send_message` call that sends it: what the owner approves is exactly
/// this, and a client verifies an approval against its own copy of the same draft.
#[derive(Clone, Copy, Debug)]
pub struct DraftMessage<'a> {
    pub account_id: &'a str,
    /// The provider's id of the thread it replies in; `None` for a new message.
    pub provider_thread: Option<&'a str>,
    pub to: &'a [String],
    pub cc: &'a [String],
    pub subject: &'a str,
    pub body: &'a str,
}

impl DraftMessage<'_> {
    /// The call's arguments: `account_id`, `thread_id` (only for a reply), `to`, `cc`, `subject`
    /// and `body`, every member always spelled the same way.
    pub fn arguments(&self) -> serde_json::Value {
        let mut arguments = serde_json::json!({
            "account_id": self.account_id,
            "to": self.to,
            "cc": self.cc,
            "subject": self.subject,
            "body": self.body,
        });
        if let Some(thread) = self.provider_thread {
            arguments["thread_id"] = thread.into();
        }
        arguments
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_names_its_operation_for_any_account() {
        assert_eq!(
            operation_of("mcp.mail_send.send_message"),
            Some(MailOperation::SendMessage)
        );
        assert_eq!(
            operation_of("mcp.mail_work_send.send_message"),
            Some(MailOperation::SendMessage)
        );
        assert_eq!(
            operation_of("mcp.mail_write.create_draft"),
            Some(MailOperation::CreateDraft)
        );
        assert_eq!(
            operation_of("mcp.mail_a_b_read.search_threads"),
            Some(MailOperation::SearchThreads)
        );
        for other in [
            "mcp.mail_read.send_message",
            "mcp.mail_send.create_draft",
            "mcp.mailsend.send_message",
            "mcp.mail__send.send_message",
            "notes.add",
            "mcp.mail_send.send",
        ] {
            assert_eq!(operation_of(other), None, "{other}");
        }
    }

    fn accounts(default: &str, ids: &[&str]) -> AccountIds {
        AccountIds {
            default_account: default.into(),
            accounts: ids.iter().map(|id| (*id).to_owned()).collect(),
        }
    }

    #[test]
    fn the_default_account_has_the_plain_names_and_others_carry_their_id() {
        let tools = tools(&accounts("personal", &["work", "personal"]));
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mcp.mail_read.search_threads",
                "mcp.mail_read.list_labels",
                "mcp.mail_write.create_draft",
                "mcp.mail_send.send_message",
                "mcp.mail_work_read.search_threads",
                "mcp.mail_work_read.list_labels",
                "mcp.mail_work_write.create_draft",
                "mcp.mail_work_send.send_message",
            ]
        );
        let scopes: Vec<&str> = tools.iter().map(|tool| tool.scope.as_str()).collect();
        assert_eq!(
            &scopes[..4],
            [
                "mcp.mail_read.use",
                "mcp.mail_read.use",
                "mcp.mail_write.use",
                "mcp.mail_send.use"
            ]
        );
        assert_eq!(scopes[7], "mcp.mail_work_send.use");
        assert!(tools[..4].iter().all(|tool| tool.account_id == "personal"));
        assert!(tools[4..].iter().all(|tool| tool.account_id == "work"));
    }

    #[test]
    fn only_writes_and_sends_have_effects() {
        let effects: Vec<bool> = MailOperation::ALL.iter().map(|op| op.has_effect()).collect();
        assert_eq!(effects, [false, false, true, true]);
        assert_eq!(MailOperation::parse("send_message"), Some(MailOperation::SendMessage));
        assert_eq!(MailOperation::parse("delete_message"), None);
        assert_eq!(scope("work", "home", MailCapability::Write), "mcp.mail_work_write.use");
        assert_eq!(scope("home", "home", MailCapability::Send), "mcp.mail_send.use");
    }

    #[test]
    fn a_draft_is_sent_by_its_own_accounts_send_tool_with_exactly_its_content() {
        let ids = accounts("personal", &["personal", "work"]);
        assert_eq!(
            send_tool(&ids, "work").map(|tool| tool.name),
            Some("mcp.mail_work_send.send_message".to_owned())
        );
        assert_eq!(
            send_tool(&ids, "personal").map(|tool| tool.name),
            Some("mcp.mail_send.send_message".to_owned())
        );
        assert_eq!(send_tool(&ids, "other"), None);
        let to = vec!["ada@example.org".to_owned()];
        let reply = DraftMessage {
            account_id: "work",
            provider_thread: Some("t1"),
            to: &to,
            cc: &[],
            subject: "Re: Plan",
            body: "Yes.",
        };
        assert_eq!(
            reply.arguments(),
            serde_json::json!({ "account_id": "work", "thread_id": "t1", "to": ["ada@example.org"], "cc": [],
                                "subject": "Re: Plan", "body": "Yes." })
        );
        let new = DraftMessage {
            provider_thread: None,
            ..reply
        };
        assert!(new.arguments().get("thread_id").is_none());
        assert_eq!(new.unsendable(), None);
        let hidden = DraftMessage {
            body: "Pay \u{200B}now",
            ..new
        };
        assert!(hidden.unsendable().is_some_and(|why| why.contains("invisible")));
        let accented = vec!["zoë@example.org".to_owned()];
        let foreign = DraftMessage { to: &accented, ..new };
        assert!(foreign.unsendable().is_some_and(|why| why.contains("ASCII")));
    }

    #[test]
    fn requested_scopes_must_be_derivable() {
        let ids = accounts("personal", &["personal"]);
        let mail = vec!["mcp.mail_read.use".to_owned(), "mcp.mail_write.use".to_owned()];
        assert!(authorize(&[], None), "no scopes need no accounts");
        assert!(authorize(&mail, Some(&ids)));
        assert!(!authorize(&mail, None), "mail scopes without mail enabled");
        assert!(!authorize(&["mcp.mail_send.use".to_owned()], Some(&ids)));
        let two = AccountIds {
            default_account: "personal".into(),
            accounts: vec!["personal".into(), "work".into()],
        };
        assert!(authorize(&["mcp.mail_work_write.use".to_owned()], Some(&two)));
        assert!(!authorize(&["mcp.mail_work_send.use".to_owned()], Some(&two)));
        assert!(authorize(&mail, Some(&AccountIds::legacy())));
    }
}
