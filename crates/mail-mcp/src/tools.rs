//! The mail tools of every connected account, each using only its own credential document:
//! `search_threads` and `list_labels` with the read document (no approval), `create_draft` with
//! the write document and `send_message` with the send document (both approved by the owner
//! first, and never repeated once their outcome is unknown). No tool downloads attachments or
//! deletes anything.
//!
//! A write or send of unknown outcome comes back as [`MailOutcome::Uncertain`] with what a
//! read-only reconciliation needs: the account, the operation and the invocation, which names
//! the message twice (its `Message-ID` and the [`INVOCATION_HEADER`]).
//! [`MailService::reconcile`] looks for it with the account's read document only: by
//! `Message-ID` in Drafts or Sent and then anywhere (trash and spam included), and, because the
//! provider may replace a sent message's `Message-ID`, by the invocation header among the
//! threads dated around the dispatch.

use domain::approval::{Risk, Tool};
use domain::mail_tools::{MailCapability, MailOperation, MailTool};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::accounts::{Account, MailAccounts};
use crate::document::CredentialDocument;
use crate::gmail::{Credential, GmailClient, MailError};
use crate::message::{INVOCATION_HEADER, Outgoing, ReplyHeaders, invocation_tag, message_id};

const SEARCH_DEFAULT_RESULTS: u64 = 10;
const SEARCH_MAX_RESULTS: u64 = 25;
const QUERY_MAX_CHARS: usize = 1000;
/// Messages described per thread (the latest ones).
const MESSAGES_PER_THREAD: usize = 5;
/// The dates a header search looks at, around the dispatch: before it (clocks differ, and a
/// dispatch recorded without an armed key is dated when its outcome was, up to a few minutes
/// late), and well past the longest a dispatch can take.
const RECONCILE_BEFORE_SECONDS: i64 = 300;
const RECONCILE_AFTER_SECONDS: i64 = 900;
/// Threads a header search looks at per query: pages of this many, at most this many pages.
const RECONCILE_PAGE_SIZE: u64 = 50;
const RECONCILE_PAGES: usize = 4;

/// What a write or send of unknown outcome leaves to reconcile. Holds no message content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciliation {
    pub account_id: String,
    pub operation: MailOperation,
    /// The invocation that made the message (named by its [`INVOCATION_HEADER`]).
    pub invocation: Uuid,
    /// The `Message-ID` header (without angle brackets) the message was given.
    pub message_id: String,
}

impl Reconciliation {
    fn of(account_id: &str, operation: MailOperation, invocation: Uuid) -> Reconciliation {
        Reconciliation {
            account_id: account_id.to_owned(),
            operation,
            invocation,
            message_id: message_id(invocation),
        }
    }
}

/// What running a mail tool came to.
#[derive(Debug, PartialEq)]
pub enum MailOutcome {
    Succeeded(Value),
    /// Nothing happened (or it was only a read); the model is told why.
    Failed {
        code: &'static str,
        message: String,
    },
    /// A write or send that may or may not have happened: `mail.outcome_unknown`.
    Uncertain {
        message: String,
        reconciliation: Reconciliation,
    },
}

/// The connected accounts, their tools and the provider client.
#[derive(Debug)]
pub struct MailService {
    accounts: MailAccounts,
    tools: Vec<MailTool>,
    client: std::sync::Arc<GmailClient>,
}

fn failed(error: &MailError) -> MailOutcome {
    MailOutcome::Failed {
        code: error.code(),
        message: error.to_string(),
    }
}

fn invalid(message: impl Into<String>) -> MailOutcome {
    MailOutcome::Failed {
        code: "tool.invalid_arguments",
        message: message.into(),
    }
}

fn message_parameters() -> Value {
    let addresses = json!({
        "description": "One address (local@domain) or a list of them",
        "anyOf": [{ "type": "string" }, { "type": "array", "items": { "type": "string" } }]
    });
    json!({
        "type": "object",
        "properties": {
            "account_id": { "type": "string", "description": "This tool's own account, when given" },
            "thread_id": { "type": "string", "description": "The provider's id of the thread it replies in" },
            "to": addresses, "cc": addresses, "bcc": addresses,
            "subject": { "type": "string" },
            "body": { "type": "string", "description": "Plain text" }
        },
        "required": ["to", "subject", "body"], "additionalProperties": false
    })
}

fn spec(tool: &MailTool) -> Tool {
    let account = &tool.account_id;
    let (description, parameters, risk) = match tool.operation {
        MailOperation::SearchThreads => (
            format!(
                "Search the threads of mail account `{account}` with a mail search query such as \
                 `in:drafts subject:\"Plan\"` or `from:ada@example.org newer_than:7d`. Read-only."
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" },
                    "max_results": { "type": "integer", "minimum": 1, "maximum": SEARCH_MAX_RESULTS },
                    "page_token": { "type": "string" }
                },
                "required": ["query"], "additionalProperties": false
            }),
            Risk::Low,
        ),
        MailOperation::ListLabels => (
            format!("List the labels of mail account `{account}`. Read-only."),
            json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            Risk::Low,
        ),
        MailOperation::CreateDraft => (
            format!(
                "Create one unsent draft in mail account `{account}`. The owner approves the exact \
                 recipients, subject and body first."
            ),
            message_parameters(),
            Risk::Medium,
        ),
        MailOperation::SendMessage => (
            format!(
                "Send one message from mail account `{account}`. The owner approves the exact \
                 recipients, subject and body first. Never resend after an uncertain outcome."
            ),
            message_parameters(),
            Risk::High,
        ),
    };
    Tool {
        name: tool.name.clone(),
        description,
        parameters,
        scope: tool.scope.clone(),
        risk,
        needs_approval: tool.operation.has_effect(),
    }
}

/// A header of a message from `threads.get` with `format=metadata`.
fn header<'a>(message: &'a Value, name: &str) -> Option<&'a str> {
    message["payload"]["headers"].as_array().and_then(|headers| {
        headers
            .iter()
            .find(|header| header["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
            .and_then(|header| header["value"].as_str())
    })
}

/// The useful headers of a message from `threads.get` with `format=metadata`.
fn describe_message(message: &Value) -> Value {
    let header = |name: &str| header(message, name);
    json!({
        "message_id": message["id"], "label_ids": message["labelIds"], "from": header("From"),
        "to": header("To"), "subject": header("Subject"), "date": header("Date"),
    })
}

impl MailService {
    /// The service of `accounts` with a provider client of its own at `endpoints`.
    pub fn connect(accounts: MailAccounts, endpoints: crate::gmail::Endpoints) -> Result<MailService, reqwest::Error> {
        Ok(MailService::new(
            accounts,
            std::sync::Arc::new(GmailClient::new(endpoints)?),
        ))
    }

    /// The service of `accounts` calling the provider through `client` (shared with the rest of
    /// the process, so its quota pacing and token cache are one per process).
    pub fn new(accounts: MailAccounts, client: std::sync::Arc<GmailClient>) -> MailService {
        let tools = domain::mail_tools::tools(&accounts.ids());
        MailService {
            accounts,
            tools,
            client,
        }
    }

    /// The provider client, for other work of the same process on the same accounts.
    pub fn client(&self) -> &std::sync::Arc<GmailClient> {
        &self.client
    }

    /// The connected accounts' ids, the default first.
    pub fn account_ids(&self) -> Vec<String> {
        self.accounts.ids().accounts
    }

    /// Every mail tool of the connected accounts.
    pub fn specs(&self) -> Vec<Tool> {
        self.tools.iter().map(spec).collect()
    }

    /// The tool called `name`, when one of the connected accounts has it.
    pub fn tool(&self, name: &str) -> Option<&MailTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    fn account(&self, id: &str) -> Option<&Account> {
        self.accounts.accounts.iter().find(|account| account.account_id == id)
    }

    fn credential<'a>(account: &'a Account, capability: MailCapability) -> Credential<'a> {
        let document: &CredentialDocument = match capability {
            MailCapability::Read => &account.read,
            MailCapability::Write => &account.write,
            MailCapability::Send => &account.send,
        };
        Credential {
            account_id: &account.account_id,
            document,
        }
    }

    /// What reconciling `tool` (a write or send) of `invocation` needs, for an invocation found
    /// with no recorded outcome; `None` for reads and other tools.
    pub fn reconciliation_for(&self, tool: &str, invocation: Uuid) -> Option<Reconciliation> {
        let tool = self.tool(tool).filter(|tool| tool.operation.has_effect())?;
        Some(Reconciliation::of(&tool.account_id, tool.operation, invocation))
    }

    /// Checks a write's or send's arguments before the owner is asked to approve them, so an
    /// approval is never given to a message that cannot be made. Other tools pass.
    pub fn check_arguments(&self, tool: &str, arguments: &Value) -> Result<(), String> {
        match self.tool(tool) {
            Some(tool) if tool.operation.has_effect() => Outgoing::for_tool(arguments, tool).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The headers that make a message a reply in `thread`: its newest message's `Message-ID`
    /// and `References`, read with the account's read document. `Err` is the call's outcome:
    /// nothing was written.
    async fn reply_headers(&self, account: &Account, thread: &str) -> Result<Option<ReplyHeaders>, MailOutcome> {
        let credential = Self::credential(account, MailCapability::Read);
        let metadata = [
            ("format", "metadata".to_owned()),
            ("metadataHeaders", "Message-ID".to_owned()),
            ("metadataHeaders", "References".to_owned()),
        ];
        let detail = self
            .client
            .read(credential, &format!("threads/{thread}"), &metadata)
            .await
            .map_err(|error| failed(&error))?;
        let newest = detail["messages"].as_array().and_then(|messages| messages.last());
        Ok(newest.and_then(|message| {
            ReplyHeaders::answering(
                header(message, "Message-ID").unwrap_or_default(),
                header(message, "References").unwrap_or_default(),
            )
        }))
    }

    /// Runs the mail tool `name` for `invocation` (whose id names the message it creates).
    pub async fn execute(&self, name: &str, arguments: &Value, invocation: Uuid) -> MailOutcome {
        let Some(tool) = self.tool(name) else {
            return MailOutcome::Failed {
                code: "tool.unknown",
                message: format!("no mail tool `{name}` is available"),
            };
        };
        let Some(account) = self.account(&tool.account_id) else {
            return MailOutcome::Failed {
                code: "mail.account_unavailable",
                message: format!("mail account `{}` is not connected", tool.account_id),
            };
        };
        let credential = Self::credential(account, tool.operation.capability());
        match tool.operation {
            MailOperation::SearchThreads => self.search_threads(credential, arguments).await,
            MailOperation::ListLabels => match self.client.read(credential, "labels", &[]).await {
                Ok(body) => {
                    let labels: Vec<Value> = body["labels"]
                        .as_array()
                        .map(|labels| {
                            labels
                                .iter()
                                .map(|label| json!({ "id": label["id"], "name": label["name"], "type": label["type"] }))
                                .collect()
                        })
                        .unwrap_or_default();
                    MailOutcome::Succeeded(json!({ "account_id": account.account_id, "labels": labels }))
                }
                Err(error) => failed(&error),
            },
            MailOperation::CreateDraft | MailOperation::SendMessage => {
                let outgoing = match Outgoing::for_tool(arguments, tool) {
                    Ok(outgoing) => outgoing,
                    Err(message) => return invalid(message),
                };
                // A reply answers the thread's newest message; reading it (with the read
                // document) comes before anything is written, so its failure changes nothing.
                let reply = match &outgoing.thread_id {
                    Some(thread) => match self.reply_headers(account, thread).await {
                        Ok(reply) => reply,
                        Err(outcome) => return outcome,
                    },
                    None => None,
                };
                let reconciliation = Reconciliation::of(&account.account_id, tool.operation, invocation);
                let raw = outgoing.raw(invocation, reply.as_ref());
                let mut message = json!({ "raw": raw });
                if let Some(thread) = &outgoing.thread_id {
                    message["threadId"] = json!(thread);
                }
                let (path, body) = if tool.operation == MailOperation::CreateDraft {
                    ("drafts", json!({ "message": message }))
                } else {
                    ("messages/send", message)
                };
                match self.client.dispatch(credential, path, &body).await {
                    Ok(answer) if tool.operation == MailOperation::CreateDraft => MailOutcome::Succeeded(json!({
                        "account_id": account.account_id, "draft_id": answer["id"],
                        "message_id": answer["message"]["id"], "thread_id": answer["message"]["threadId"],
                        "sent": false,
                    })),
                    Ok(answer) => MailOutcome::Succeeded(json!({
                        "account_id": account.account_id, "message_id": answer["id"],
                        "thread_id": answer["threadId"], "sent": true,
                    })),
                    Err(MailError::OutcomeUnknown(detail)) => MailOutcome::Uncertain {
                        message: format!(
                            "the {} may or may not have happened ({detail}); it will not be repeated, and \
                             the mailbox is being checked for it",
                            if tool.operation == MailOperation::CreateDraft {
                                "draft"
                            } else {
                                "send"
                            }
                        ),
                        reconciliation,
                    },
                    Err(error) => failed(&error),
                }
            }
        }
    }

    async fn search_threads(&self, credential: Credential<'_>, arguments: &Value) -> MailOutcome {
        let Some(query) = arguments["query"]
            .as_str()
            .map(str::trim)
            .filter(|query| !query.is_empty())
        else {
            return invalid("`query` must be a non-empty string");
        };
        if query.chars().count() > QUERY_MAX_CHARS {
            return invalid(format!("`query` is longer than {QUERY_MAX_CHARS} characters"));
        }
        let max_results = match &arguments["max_results"] {
            Value::Null => SEARCH_DEFAULT_RESULTS,
            value => match value.as_u64().filter(|n| (1..=SEARCH_MAX_RESULTS).contains(n)) {
                Some(n) => n,
                None => return invalid(format!("`max_results` must be between 1 and {SEARCH_MAX_RESULTS}")),
            },
        };
        let mut query_parameters = vec![("q", query.to_owned()), ("maxResults", max_results.to_string())];
        if let Some(token) = arguments["page_token"].as_str() {
            query_parameters.push(("pageToken", token.to_owned()));
        }
        let listed = match self.client.read(credential, "threads", &query_parameters).await {
            Ok(listed) => listed,
            Err(error) => return failed(&error),
        };
        let mut threads = Vec::new();
        for thread in listed["threads"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let Some(id) = thread["id"].as_str() else { continue };
            let metadata = [
                ("format", "metadata".to_owned()),
                ("metadataHeaders", "From".to_owned()),
                ("metadataHeaders", "To".to_owned()),
                ("metadataHeaders", "Subject".to_owned()),
                ("metadataHeaders", "Date".to_owned()),
            ];
            let detail = match self.client.read(credential, &format!("threads/{id}"), &metadata).await {
                Ok(detail) => detail,
                Err(error) => return failed(&error),
            };
            let messages = detail["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
            let latest = &messages[messages.len().saturating_sub(MESSAGES_PER_THREAD)..];
            threads.push(json!({
                "thread_id": id, "snippet": thread["snippet"], "message_count": messages.len(),
                "messages": latest.iter().map(describe_message).collect::<Vec<_>>(),
            }));
        }
        MailOutcome::Succeeded(json!({
            "account_id": credential.account_id, "query": query, "threads": threads,
            "next_page_token": listed["nextPageToken"],
        }))
    }

    /// Looks for the message of an uncertain write or send dispatched at `dispatched_at` (Unix
    /// seconds) with the account's read document, read-only: by `Message-ID` in its folder
    /// (Drafts or Sent) and then anywhere (moved, trashed, spam, a draft since sent); then by
    /// the invocation header among the threads dated around the dispatch, which finds it when
    /// the provider replaced the `Message-ID`. `Some(thread id)` when found.
    pub async fn reconcile(
        &self,
        reconciliation: &Reconciliation,
        dispatched_at: i64,
    ) -> Result<Option<String>, MailError> {
        let Some(account) = self.account(&reconciliation.account_id) else {
            return Err(MailError::Unavailable(format!(
                "mail account `{}` is not connected",
                reconciliation.account_id
            )));
        };
        let credential = Self::credential(account, MailCapability::Read);
        let folder = if reconciliation.operation == MailOperation::CreateDraft {
            "in:drafts"
        } else {
            "in:sent"
        };
        let everywhere = |query: String| {
            vec![
                ("q", query),
                ("includeSpamTrash", "true".to_owned()),
                ("maxResults", RECONCILE_PAGE_SIZE.to_string()),
            ]
        };
        for scope in [folder, "in:anywhere"] {
            let query = everywhere(format!("{scope} rfc822msgid:{}", reconciliation.message_id));
            let listed = self.client.read(credential, "threads", &query).await?;
            if let Some(thread) = listed["threads"][0]["id"].as_str() {
                return Ok(Some(thread.to_owned()));
            }
        }
        let window = format!(
            "after:{} before:{}",
            dispatched_at - RECONCILE_BEFORE_SECONDS,
            dispatched_at + RECONCILE_AFTER_SECONDS
        );
        let tag = invocation_tag(reconciliation.invocation);
        let mut looked_at = std::collections::HashSet::new();
        for scope in [folder, "in:anywhere"] {
            let mut page_token: Option<String> = None;
            for _ in 0..RECONCILE_PAGES {
                let mut query = everywhere(format!("{scope} {window}"));
                if let Some(token) = page_token.take() {
                    query.push(("pageToken", token));
                }
                let listed = self.client.read(credential, "threads", &query).await?;
                for thread in listed["threads"].as_array().map(Vec::as_slice).unwrap_or_default() {
                    let Some(id) = thread["id"].as_str() else { continue };
                    if !looked_at.insert(id.to_owned()) {
                        continue;
                    }
                    let metadata = [
                        ("format", "metadata".to_owned()),
                        ("metadataHeaders", INVOCATION_HEADER.to_owned()),
                    ];
                    let detail = self
                        .client
                        .read(credential, &format!("threads/{id}"), &metadata)
                        .await?;
                    let messages = detail["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
                    if messages
                        .iter()
                        .any(|message| header(message, INVOCATION_HEADER).map(str::trim) == Some(tag.as_str()))
                    {
                        return Ok(Some(id.to_owned()));
                    }
                }
                match listed["nextPageToken"].as_str() {
                    Some(token) => page_token = Some(token.to_owned()),
                    None => break,
                }
            }
        }
        Ok(None)
    }
}
