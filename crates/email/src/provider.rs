//! The mail provider as the async worker reads it, with an account's read document only: the
//! profile (its current history id), the messages a query finds (`messages.list`, every page),
//! the changes since a history id (`history.list`, every page; a start the provider no longer
//! keeps is [`HistoryError::Expired`], answered by a full resynchronisation), and one message's
//! RFC 5322 bytes with its labels (`messages.get?format=raw`). Reads go
//! through `mail_mcp::gmail::GmailClient`, which paces each account to the per-user quota and
//! backs off on 429 and 5xx.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use mail_mcp::gmail::{Credential, GmailClient, MailError};
use serde_json::Value;

/// The most history records asked for per page.
const HISTORY_PAGE: &str = "500";
/// The most messages asked for per list page (the provider's maximum).
const LIST_PAGE: &str = "500";

/// The account's address and where its history stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub address: String,
    pub history_id: String,
}

/// A message named by the history.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MessageRef {
    pub id: String,
    pub thread_id: String,
}

/// What changed since a history id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// New messages, each once, in history order.
    pub added: Vec<MessageRef>,
    /// Messages whose labels changed: message id → (thread id, its labels after the change).
    pub relabelled: BTreeMap<String, (String, Vec<String>)>,
    /// Where the history stands after these changes: the next start.
    pub history_id: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HistoryError {
    /// The provider no longer keeps history from that id: resynchronise in full.
    #[error("the provider no longer keeps the history from that point")]
    Expired,
    #[error(transparent)]
    Mail(#[from] MailError),
}

/// One message's bytes and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawMessage {
    pub id: String,
    pub thread_id: String,
    pub label_ids: Vec<String>,
    pub bytes: Vec<u8>,
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn labels(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|label| label.as_str().map(str::to_owned))
        .collect()
}

fn unexpected(what: &str) -> MailError {
    MailError::Rejected {
        status: 200,
        reason: format!("the provider's answer has no {what}"),
    }
}

pub async fn profile(gmail: &GmailClient, credential: Credential<'_>) -> Result<Profile, MailError> {
    let body = gmail.read(credential, "profile", &[]).await?;
    let history_id = text(&body["historyId"]);
    if history_id.is_empty() {
        return Err(unexpected("historyId"));
    }
    Ok(Profile {
        address: text(&body["emailAddress"]),
        history_id,
    })
}

/// The messages `query` finds (the provider's search language; Spam and Trash included), newest
/// first, every page.
pub async fn list_messages(
    gmail: &GmailClient,
    credential: Credential<'_>,
    query: &str,
) -> Result<Vec<MessageRef>, MailError> {
    let mut found = Vec::new();
    let mut page: Option<String> = None;
    loop {
        let mut parameters = vec![
            ("q", query.to_owned()),
            ("maxResults", LIST_PAGE.to_owned()),
            ("includeSpamTrash", "true".to_owned()),
        ];
        if let Some(token) = &page {
            parameters.push(("pageToken", token.clone()));
        }
        let body = gmail.read(credential, "messages", &parameters).await?;
        for message in body["messages"].as_array().into_iter().flatten() {
            let (id, thread_id) = (text(&message["id"]), text(&message["threadId"]));
            if !id.is_empty() && !thread_id.is_empty() {
                found.push(MessageRef { id, thread_id });
            }
        }
        match body["nextPageToken"].as_str() {
            Some(token) if page.as_deref() != Some(token) => page = Some(token.to_owned()),
            _ => return Ok(found),
        }
    }
}

/// Every change after history id `start`, all pages.
pub async fn changes_since(
    gmail: &GmailClient,
    credential: Credential<'_>,
    start: &str,
) -> Result<Changes, HistoryError> {
    let mut changes = Changes {
        history_id: start.to_owned(),
        ..Changes::default()
    };
    let mut seen = BTreeSet::new();
    let mut page: Option<String> = None;
    loop {
        let mut query = vec![
            ("startHistoryId", start.to_owned()),
            ("maxResults", HISTORY_PAGE.to_owned()),
        ];
        if let Some(token) = &page {
            query.push(("pageToken", token.clone()));
        }
        let body = match gmail.read(credential, "history", &query).await {
            Ok(body) => body,
            Err(MailError::Rejected { status: 404, .. }) => return Err(HistoryError::Expired),
            Err(error) => return Err(error.into()),
        };
        for record in body["history"].as_array().into_iter().flatten() {
            for added in record["messagesAdded"].as_array().into_iter().flatten() {
                let message = MessageRef {
                    id: text(&added["message"]["id"]),
                    thread_id: text(&added["message"]["threadId"]),
                };
                if !message.id.is_empty() && seen.insert(message.id.clone()) {
                    changes.added.push(message);
                }
            }
            for kind in ["labelsAdded", "labelsRemoved"] {
                for changed in record[kind].as_array().into_iter().flatten() {
                    let message = &changed["message"];
                    let (id, thread) = (text(&message["id"]), text(&message["threadId"]));
                    if !id.is_empty() && !thread.is_empty() {
                        // Records are oldest first: the last one names the labels now.
                        changes.relabelled.insert(id, (thread, labels(&message["labelIds"])));
                    }
                }
            }
        }
        let history_id = text(&body["historyId"]);
        if !history_id.is_empty() {
            changes.history_id = history_id;
        }
        match body["nextPageToken"].as_str() {
            Some(token) if page.as_deref() != Some(token) => page = Some(token.to_owned()),
            _ => return Ok(changes),
        }
    }
}

/// The message `id` as RFC 5322 bytes.
pub async fn raw_message(gmail: &GmailClient, credential: Credential<'_>, id: &str) -> Result<RawMessage, MailError> {
    let body = gmail
        .read(credential, &format!("messages/{id}"), &[("format", "raw".to_owned())])
        .await?;
    let encoded = body["raw"].as_str().ok_or_else(|| unexpected("raw message"))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded.trim_end_matches('='))
        .map_err(|_| unexpected("readable raw message"))?;
    Ok(RawMessage {
        id: text(&body["id"]),
        thread_id: text(&body["threadId"]),
        label_ids: labels(&body["labelIds"]),
        bytes,
    })
}
