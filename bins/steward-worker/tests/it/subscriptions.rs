//! Unsubscribe assistance in Chat: the real API and worker with the scripted model. The census
//! lists senders without a URI; an unsubscribe waits for an approval that names the sender and
//! the destination host and never a path, and becomes one command; a destination that reads as
//! a URL is refused before any approval; without the flag neither tool exists.

use serde_json::Value;
use store::{CensusCandidate, CensusEntry};

use crate::mail::Mail;
use crate::support::Stack;

const SCOPES: &str = "sessions.read,sessions.write,email.read,email.write";
const TARGET: &str = "https://letters.example/u/7?token=secret-token";

async fn stack(mail: &Mail, unsubscribe: bool) -> Stack {
    let flags: Vec<(&str, &str)> = if unsubscribe {
        vec![
            ("AGENT_EMAIL_MODE_ENABLED", "1"),
            ("AGENT_EMAIL_UNSUBSCRIBE_ENABLED", "1"),
            // Nothing is resolved here: the command is recorded, not sent.
            ("EMAIL_DNS_SERVER", "127.0.0.1:9"),
        ]
    } else {
        vec![("AGENT_EMAIL_MODE_ENABLED", "1")]
    };
    let mut stack = mail.api_with(SCOPES, &flags).await;
    mail.start_worker(&mut stack, &flags).await;
    let census = stack.store_as("async-worker").await;
    census
        .email()
        .ensure_accounts(&["personal".into()])
        .await
        .expect("account");
    let candidate = CensusCandidate {
        sender: "news@letters.example".into(),
        sender_name: Some("Letters".into()),
        conversations: 4,
        last_arrival_at: jiff::Timestamp::now(),
        newest_message: "m-1".into(),
        protected: false,
    };
    census
        .email()
        .record_census(
            &"personal".into(),
            &CensusEntry {
                candidate: &candidate,
                evidence_message: "m-1",
                check: domain::email::EvidenceCheck::Verified,
                mechanism: Some((domain::email::UnsubscribeMechanism::OneClick, TARGET, "letters.example")),
                digest: &"d".repeat(64),
            },
        )
        .await
        .expect("census row");
    stack
}

fn last_result(results: &[Value]) -> &Value {
    results.last().expect("a tool result")
}

#[tokio::test]
async fn a_chat_unsubscribe_waits_for_an_approval_naming_sender_and_host_and_becomes_one_command() {
    let mail = Mail::start().await;
    let stack = stack(&mail, true).await;
    let session = stack.session().await;

    let run = stack.submit(&session, "/tool subscriptions.list {}").await;
    stack.completes(&run).await;
    let listed = last_result(&stack.tool_results(&session).await).to_string();
    assert!(listed.contains("news@letters.example"), "{listed}");
    assert!(listed.contains("One-click request to letters.example"), "{listed}");
    assert!(
        !listed.contains("https://") && !listed.contains("secret-token"),
        "no URI: {listed}"
    );
    let id: uuid::Uuid = stack.scalar("SELECT id FROM email_subscriptions").await;

    // A destination that reads as a URL is refused before any approval is asked.
    let run = stack
        .submit(
            &session,
            &format!(
                r#"/tool subscriptions.unsubscribe {{"subscription_id": "{id}", "sender": "news@letters.example", "destination": "letters.example/u/7"}}"#
            ),
        )
        .await;
    stack.completes(&run).await;
    assert!(stack.pending_approvals(&session).await.is_empty());
    let refused = last_result(&stack.tool_results(&session).await).to_string();
    assert!(refused.contains("never a URL"), "{refused}");

    let run = stack
        .submit(
            &session,
            &format!(
                r#"/tool subscriptions.unsubscribe {{"subscription_id": "{id}", "sender": "news@letters.example", "destination": "letters.example"}}"#
            ),
        )
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    let shown = approval.to_string();
    assert!(
        shown.contains("news@letters.example") && shown.contains("letters.example"),
        "the approval names sender and host: {shown}"
    );
    assert!(
        !shown.contains("/u/7") && !shown.contains("secret-token"),
        "never a path: {shown}"
    );
    let commands: i64 = stack
        .scalar("SELECT count(*) FROM email_operations WHERE kind = 'unsubscribe'")
        .await;
    assert_eq!(commands, 0, "nothing before the approval");
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    let done = last_result(&stack.tool_results(&session).await).to_string();
    assert!(done.contains("unsubscribing"), "{done}");
    let commands: i64 = stack
        .scalar("SELECT count(*) FROM email_operations WHERE kind = 'unsubscribe'")
        .await;
    assert_eq!(commands, 1);
    let state: String = stack.scalar("SELECT state FROM email_subscriptions").await;
    assert_eq!(state, "unsubscribing");
}

#[tokio::test]
async fn without_the_flag_neither_tool_exists() {
    let mail = Mail::start().await;
    let stack = stack(&mail, false).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "/tool subscriptions.list {}").await;
    stack.completes(&run).await;
    let result = last_result(&stack.tool_results(&session).await).to_string();
    assert!(result.contains("tool.unknown"), "{result}");
}
