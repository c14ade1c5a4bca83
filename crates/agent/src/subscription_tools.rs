//! The Chat tools of unsubscribe assistance, in a worker running with
//! `AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1` (and gone from every run's box without it):
//!
//! - `subscriptions.list` (low risk, no approval): the census as the Subscriptions view shows
//!   it, by account and state: sender, conversations, what an unsubscribe would send (the host
//!   or the address, never a URI) and state.
//! - `subscriptions.unsubscribe` (high risk, approved first): one sender. Its arguments name the
//!   subscription, the sender and the destination (the host, or the mailto address), so the
//!   approval the owner reads names exactly those; a destination carrying a path, query or
//!   scheme is refused before approval is asked. Run, it goes ahead only while the row still
//!   shows that sender and destination and is eligible, as one unsubscribe command (the worker's
//!   own transport sends it once); anything else fails without sending.

use domain::approval::Risk;
use domain::email::SubscriptionState;
use domain::ids::{AccountId, SubscriptionId};
use serde_json::{Value, json};
use store::{ConfirmedTarget, Store, SubscriptionQuery, SubscriptionRow, UnsubscribeRequest};

use domain::approval::Tool;

use crate::outcome::{ToolOutcome, failed};

pub const LIST: &str = "subscriptions.list";
pub const UNSUBSCRIBE: &str = "subscriptions.unsubscribe";

/// The rows `subscriptions.list` shows at most.
const LIST_LIMIT: i64 = 100;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: LIST.into(),
            description: "List the senders of newsletters and lists (the subscription census): for each, the \
                          subscription_id, sender, conversations, what an unsubscribe would send (a one-click \
                          request to a host, or an email to an address) and its state. `unverified` senders \
                          cannot be unsubscribed yet."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "account_id": { "type": "string" },
                    "state": { "type": "string", "enum": SubscriptionState::ALL.iter().map(|state| state.as_str()).collect::<Vec<_>>() }
                },
                "additionalProperties": false
            }),
            scope: "subscriptions.read".into(),
            risk: Risk::Low,
            needs_approval: false,
        },
        Tool {
            name: UNSUBSCRIBE.into(),
            description: "Unsubscribe the owner from one eligible sender, as subscriptions.list shows it. Name the \
                          subscription_id, the sender's address and the destination exactly as listed (the host, \
                          or the email address). The owner approves each unsubscribe first; it cannot be undone."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "subscription_id": { "type": "string" },
                    "sender": { "type": "string" },
                    "destination": { "type": "string" }
                },
                "required": ["subscription_id", "sender", "destination"],
                "additionalProperties": false
            }),
            scope: "subscriptions.write".into(),
            risk: Risk::High,
            needs_approval: true,
        },
    ]
}

/// What an unsubscribe would send, in words.
fn offer(row: &SubscriptionRow) -> Value {
    match (row.mechanism, row.destination.as_deref()) {
        (Some(domain::email::UnsubscribeMechanism::OneClick), Some(host)) => {
            json!(format!("One-click request to {host}"))
        }
        (Some(domain::email::UnsubscribeMechanism::Mailto), Some(address)) => {
            json!(format!("Sends an email to {address}"))
        }
        _ if row.state == SubscriptionState::Unverified => json!("Checking…"),
        _ => json!("Offers only a web page"),
    }
}

/// A destination as the census shows one: a host or an address, nothing that reads as a URI.
fn plain_destination(destination: &str) -> bool {
    !destination.is_empty()
        && destination.len() <= 254
        && !destination
            .chars()
            .any(|c| matches!(c, '/' | '?' | '#' | ':' | '\\') || c.is_whitespace() || c.is_control())
}

/// The arguments of `subscriptions.unsubscribe`, checked before approval is asked.
pub fn check_arguments(tool: &str, arguments: &Value) -> Result<(), String> {
    if tool != UNSUBSCRIBE {
        return Ok(());
    }
    let text = |name: &str| arguments[name].as_str().map(str::trim).unwrap_or_default();
    if SubscriptionId::parse(text("subscription_id")).is_none() {
        return Err("`subscription_id` must be a subscription's id from subscriptions.list".into());
    }
    if !text("sender").contains('@') {
        return Err("`sender` must be the sender's address from subscriptions.list".into());
    }
    if !plain_destination(text("destination")) {
        return Err("`destination` must be the host or address from subscriptions.list, never a URL".into());
    }
    Ok(())
}

pub async fn execute(store: &Store, tool: &str, arguments: &Value) -> ToolOutcome {
    match tool {
        LIST => list(store, arguments).await,
        UNSUBSCRIBE => unsubscribe(store, arguments).await,
        other => failed("tool.unknown", format!("no tool `{other}` is available")),
    }
}

async fn list(store: &Store, arguments: &Value) -> ToolOutcome {
    let state = match arguments["state"].as_str() {
        None => None,
        Some(text) => match SubscriptionState::parse(text) {
            Some(state) => Some(state),
            None => {
                return failed(
                    "tool.invalid_arguments",
                    format!("`state` `{text}` is not a subscription state"),
                );
            }
        },
    };
    let query = SubscriptionQuery {
        account: arguments["account_id"].as_str().map(AccountId::from),
        state,
        after: None,
        limit: LIST_LIMIT,
    };
    match store.email().list_subscriptions(&query).await {
        Ok(rows) => ToolOutcome::Succeeded(json!({
            "subscriptions": rows.iter().map(|row| json!({
                "subscription_id": row.id.to_string(),
                "account_id": row.account_id.as_str(),
                "sender": row.sender,
                "sender_name": row.sender_name,
                "conversations": row.conversations,
                "last_arrival_at": row.last_arrival_at.to_string(),
                "offers": offer(row),
                "destination": row.destination,
                "state": row.state.as_str(),
                "protected": row.protected,
            })).collect::<Vec<_>>()
        })),
        Err(error) => failed("tool.storage", error.to_string()),
    }
}

async fn unsubscribe(store: &Store, arguments: &Value) -> ToolOutcome {
    if let Err(message) = check_arguments(UNSUBSCRIBE, arguments) {
        return failed("tool.invalid_arguments", message);
    }
    let text = |name: &str| arguments[name].as_str().map(str::trim).unwrap_or_default();
    let Some(id) = SubscriptionId::parse(text("subscription_id")) else {
        return failed("tool.invalid_arguments", "`subscription_id` is not an id");
    };
    let row = match store.email().subscription(id).await {
        Ok(Some(row)) => row,
        Ok(None) => return failed("subscriptions.not_found", "no such sender"),
        Err(error) => return failed("tool.storage", error.to_string()),
    };
    // Only what the owner approved: this sender, to this destination, and nothing has moved.
    let approved = row.sender.eq_ignore_ascii_case(text("sender"))
        && row
            .destination
            .as_deref()
            .is_some_and(|destination| destination.eq_ignore_ascii_case(text("destination")));
    if !approved {
        return failed(
            "subscriptions.changed",
            "the sender or destination is not what was approved; list the subscriptions again",
        );
    }
    let confirmed = ConfirmedTarget {
        subscription: row.id,
        digest: row.digest.clone(),
        revision: row.revision,
    };
    match store.email().request_unsubscribe(&[confirmed], false).await {
        Ok(UnsubscribeRequest::Accepted { operation, .. }) => ToolOutcome::Succeeded(json!({
            "operation_id": operation.id.to_string(),
            "state": "unsubscribing",
            "sender": row.sender,
            "destination": row.destination,
        })),
        Ok(_) => failed(
            "subscriptions.not_eligible",
            format!(
                "{} cannot be unsubscribed as it is now ({})",
                row.sender,
                row.state.as_str()
            ),
        ),
        Err(error) => ToolOutcome::Uncertain {
            code: "tool.outcome_unknown",
            message: error.to_string(),
            reconciliation: None,
        },
    }
}
