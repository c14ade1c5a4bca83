//! Review & Send end to end: the real API and worker, a mailbox projected by the async worker's
//! refresh from the Gmail stand-in, a reply drafted over HTTP, frozen, approved once and sent
//! exactly as frozen, once; a save that voids an unapproved freeze; a send whose connection
//! drops, checked by reading and never repeated.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use sha2::Digest;
use testkit::gmail::SendFault;

use crate::mail::{Mail, sends};
use crate::support::{Stack, json};

const SCOPES: &str = "sessions.read,sessions.write,email.read,email.write";

/// The stack with Email mode on, a worker (with `worker_env`), and the owner's `personal`
/// mailbox projected with one letter from Ada; returns the stack, that conversation's id and its
/// provider id.
async fn mailbox(mail: &Mail, worker_env: &[(&str, &str)]) -> (Stack, String, String) {
    let letter = mail.gmail.deliver(
        "personal",
        "ada@example.org",
        "Lunch",
        "Are you free on Friday?",
        &["INBOX"],
    );
    let mut stack = mail.api_with(SCOPES, &[("AGENT_EMAIL_MODE_ENABLED", "1")]).await;
    mail.start_worker(&mut stack, worker_env).await;
    let vars = mail.worker_vars();
    let get = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    let endpoints = mail_mcp::gmail::Endpoints::from_env(get).expect("endpoints");
    let refresher = email::refresh::Refresher {
        store: stack.store_as("async-worker").await,
        gmail: Arc::new(mail_mcp::gmail::GmailClient::new(endpoints).expect("client")),
        backfill: jiff::SignedDuration::from_hours(24),
        classifier: Arc::new(email::classify::Classifier::Offline),
        census: None,
        junk: email::junk::JunkSettings::off(),
    };
    let accounts = mail_mcp::accounts::read_accounts_from_env(get)
        .expect("accounts")
        .expect("mail on");
    let ids: Vec<domain::ids::AccountId> = accounts.iter().map(|account| account.account_id.clone()).collect();
    refresher.store.email().ensure_accounts(&ids).await.expect("accounts");
    for account in &accounts {
        refresher.update(account).await.expect("refresh");
    }
    let thread: uuid::Uuid = stack
        .scalar(&format!(
            "SELECT id FROM email_threads WHERE provider_thread_id = '{letter}'"
        ))
        .await;
    (stack, thread.to_string(), letter)
}

async fn call(stack: &Stack, method: Method, path: &str, body: Value) -> (u16, Value) {
    json(stack.request(method, path).json(&body).send().await.expect("send")).await
}

/// Polls the draft until its send is in one of `states`.
async fn send_reaches(stack: &Stack, draft: &str, states: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let current = stack.get(&format!("/v1/email/drafts/{draft}")).await;
        if states.iter().any(|state| current["send"]["state"] == *state) {
            return current;
        }
        assert!(Instant::now() < deadline, "send never reached {states:?}: {current}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A reply to `thread` saved as revision 2 with `body`; the draft's id.
async fn reply(stack: &Stack, thread: &str, body: &str) -> String {
    let (status, created) = call(
        stack,
        Method::POST,
        "/v1/email/drafts",
        json!({ "thread_id": thread, "to": ["ada@example.org"], "subject": "Re: Lunch", "body": "Yes" }),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let draft = created["draft_id"].as_str().expect("id").to_owned();
    let (status, saved) = call(
        stack,
        Method::PUT,
        &format!("/v1/email/drafts/{draft}"),
        json!({ "expected_revision": 1, "to": ["ada@example.org"], "subject": "Re: Lunch", "body": body }),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    draft
}

async fn review(stack: &Stack, draft: &str, revision: u32) -> (u16, Value) {
    call(
        stack,
        Method::POST,
        &format!("/v1/email/drafts/{draft}/review"),
        json!({ "revision": revision }),
    )
    .await
}

/// The letter from the owner's `personal` account that reached Ada.
fn delivered_to_ada(mail: &Mail) -> Vec<testkit::gmail::StoredMessage> {
    mail.gmail
        .messages("ada", "INBOX")
        .into_iter()
        .filter(|message| message.subject == "Re: Lunch")
        .collect()
}

#[tokio::test]
async fn review_and_send_sends_exactly_the_frozen_reply_once_in_its_thread() {
    let mail = Mail::start().await;
    let (stack, thread, letter) = mailbox(&mail, &[]).await;
    let body = format!("Friday works.\n{}\nAda, see you at noon.", "Lunch plans. ".repeat(60));
    let draft = reply(&stack, &thread, &body).await;
    // The conversation's row shows the reply in progress.
    let row = stack.get(&format!("/v1/email/threads/{thread}")).await;
    assert_eq!(
        (row["state"].as_str(), row["draft_id"].as_str()),
        (Some("draft"), Some(draft.as_str()))
    );
    assert_eq!(row["provider_thread_id"], letter.as_str());

    // Each account names the tool its Review & Send asks approval for.
    let accounts = stack.get("/v1/email/accounts").await;
    let tools: Vec<(&str, &str)> = accounts["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .map(|account| {
            (
                account["account_id"].as_str().unwrap_or_default(),
                account["send_tool"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("personal", "mcp.mail_send.send_message"),
            ("work", "mcp.mail_work_send.send_message")
        ]
    );

    let (status, frozen) = review(&stack, &draft, 2).await;
    assert_eq!(status, 202, "{frozen}");
    assert_eq!(frozen["send"]["revision"], 2);
    let waiting = send_reaches(&stack, &draft, &["awaiting_approval"]).await;
    let approval = &waiting["send"]["approval"];
    // Exactly the frozen draft: the account's send tool, its thread, recipients, subject and
    // body (cut at 512 characters and proven by its digest).
    assert_eq!(approval["tool"], "mcp.mail_send.send_message");
    assert_eq!(approval["status"], "PENDING");
    let shown = &approval["arguments"];
    assert_eq!(shown["account_id"], "personal");
    assert_eq!(shown["thread_id"], letter.as_str());
    assert_eq!(shown["to"], json!(["ada@example.org"]));
    assert_eq!(shown["cc"], json!([]));
    assert_eq!(shown["subject"], "Re: Lunch");
    let cut: String = body.chars().take(512).collect();
    assert_eq!(shown["body"], cut.as_str());
    assert_eq!(
        approval["argument_digests"]["/body"],
        hex(&sha2::Sha256::digest(body.as_bytes()))
    );
    // Asking again while it waits answers with the same freeze.
    let (status, again) = review(&stack, &draft, 2).await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["send"]["run_id"], waiting["send"]["run_id"]);
    // The send session stays out of the session index.
    let index = stack.get("/v1/sessions").await;
    assert!(
        index["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .all(|session| session["session_id"] != waiting["send"]["session_id"]),
        "{index}"
    );
    // Read on its own (as a send approval's notification opens it), it names its draft; a
    // conversation names none.
    let send_session = waiting["send"]["session_id"].as_str().expect("send session");
    let opened = stack.get(&format!("/v1/sessions/{send_session}")).await;
    assert_eq!(opened["draft_id"], draft.as_str(), "{opened}");
    let conversation = stack.session().await;
    let chat = stack.get(&format!("/v1/sessions/{conversation}")).await;
    assert_eq!(chat["draft_id"], Value::Null, "{chat}");

    stack.decide_ok(approval, "approve_once").await;
    let sent = send_reaches(&stack, &draft, &["sent"]).await;
    assert_eq!(sent["send"]["approval"]["status"], "APPROVED");
    assert_eq!(sends(&mail.gmail), 1);
    let arrived = delivered_to_ada(&mail);
    assert_eq!(arrived.len(), 1);
    assert_eq!(arrived[0].body, body.trim_end());
    // It went out in the conversation, answering Ada's letter.
    let outgoing = mail.gmail.messages("personal", "SENT");
    assert_eq!(outgoing.len(), 1);
    assert_eq!(outgoing[0].thread_id, letter);
    let original = mail
        .gmail
        .messages("personal", "INBOX")
        .into_iter()
        .find(|message| message.id == letter)
        .expect("letter");
    let in_reply_to = outgoing[0]
        .extra_headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("In-Reply-To"))
        .map(|(_, value)| value.clone());
    assert_eq!(in_reply_to, Some(format!("<{}>", original.message_id)));

    // Sent: the draft no longer changes and is not frozen again.
    let (status, refused) = call(
        &stack,
        Method::PUT,
        &format!("/v1/email/drafts/{draft}"),
        json!({ "expected_revision": 2, "to": ["ada@example.org"], "subject": "Re: Lunch", "body": "Again" }),
    )
    .await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("email_draft_sending")));
    let (status, refused) = review(&stack, &draft, 2).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("email_draft_sending")));
    assert_eq!(sends(&mail.gmail), 1);
}

#[tokio::test]
async fn a_save_after_freezing_voids_the_approval_and_only_the_new_revision_is_sent() {
    let mail = Mail::start().await;
    let (stack, thread, _) = mailbox(&mail, &[]).await;
    // What the send tool would refuse is never frozen: invisible formatting in the body.
    let hidden = reply(&stack, &thread, "Pay \u{200B}now").await;
    let (status, refused) = review(&stack, &hidden, 2).await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("email_draft_unsendable")),
        "{refused}"
    );
    let draft = reply(&stack, &thread, "Friday works.").await;
    let (status, _) = review(&stack, &draft, 2).await;
    assert_eq!(status, 202);
    let waiting = send_reaches(&stack, &draft, &["awaiting_approval"]).await;
    let first = waiting["send"]["approval"].clone();

    let (status, saved) = call(
        &stack,
        Method::PUT,
        &format!("/v1/email/drafts/{draft}"),
        json!({ "expected_revision": 2, "to": ["ada@example.org"], "subject": "Re: Lunch", "body": "Saturday instead." }),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["revision"], 3);
    assert_eq!(saved["send"]["state"], "not_sent");
    assert_eq!(saved["send"]["code"], "draft_changed");
    assert_eq!(saved["send"]["approval"]["status"], "CANCELLED");
    // The voided approval can no longer be given.
    let response = stack
        .decide(first["approval_id"].as_str().expect("id"), "approve_once")
        .await;
    let (status, body) = json(response).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("approval_already_resolved"))
    );
    // Reviewing the revision it replaced is a conflict carrying the newest.
    let (status, stale) = review(&stack, &draft, 2).await;
    assert_eq!((status, stale["code"].as_str()), (409, Some("revision_mismatch")));
    assert_eq!(stale["server"]["revision"], 3);

    let (status, _) = review(&stack, &draft, 3).await;
    assert_eq!(status, 202);
    let waiting = send_reaches(&stack, &draft, &["awaiting_approval"]).await;
    assert_eq!(waiting["send"]["approval"]["arguments"]["body"], "Saturday instead.");
    assert_ne!(waiting["send"]["approval"]["approval_id"], first["approval_id"]);
    // Denied: not sent, and the same revision can be reviewed again at once.
    stack.decide_ok(&waiting["send"]["approval"], "deny").await;
    let denied = send_reaches(&stack, &draft, &["not_sent"]).await;
    assert_eq!(denied["send"]["code"], "approval.denied");
    let (status, again) = review(&stack, &draft, 3).await;
    assert_eq!(status, 202, "{again}");
    let waiting = send_reaches(&stack, &draft, &["awaiting_approval"]).await;
    assert_ne!(waiting["send"]["run_id"], denied["send"]["run_id"]);
    stack.decide_ok(&waiting["send"]["approval"], "approve_once").await;
    send_reaches(&stack, &draft, &["sent"]).await;
    let arrived = delivered_to_ada(&mail);
    assert_eq!(arrived.len(), 1);
    assert_eq!(arrived[0].body, "Saturday instead.");
    assert_eq!(sends(&mail.gmail), 1);
}

#[tokio::test]
async fn a_send_whose_connection_drops_is_outcome_unknown_then_found_by_reading_and_never_repeated() {
    let mail = Mail::start().await;
    let (stack, thread, _) = mailbox(&mail, &[]).await;
    let draft = reply(&stack, &thread, "Friday works.").await;
    // The provider stores the message, then the connection drops before any answer.
    mail.gmail.fail_next_send(SendFault::DropConnection);
    let (status, _) = review(&stack, &draft, 2).await;
    assert_eq!(status, 202);
    let waiting = send_reaches(&stack, &draft, &["awaiting_approval"]).await;
    stack.decide_ok(&waiting["send"]["approval"], "approve_once").await;
    let settled = send_reaches(&stack, &draft, &["sent"]).await;
    // It went through `mail.outcome_unknown` (the row's `Check send status`) and was found by
    // reading, never by sending again.
    let session = settled["send"]["session_id"].as_str().expect("session");
    let events = stack.events(session).await;
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    assert!(kinds.contains(&"mail.outcome_unknown"), "{kinds:?}");
    let reconciled = events
        .iter()
        .find(|(kind, _)| kind == "mail.reconciled")
        .map(|(_, payload)| payload.clone())
        .expect("reconciled");
    assert_eq!(reconciled["state"], "found");
    assert_eq!(sends(&mail.gmail), 1);
    assert_eq!(delivered_to_ada(&mail).len(), 1);
    let (status, refused) = review(&stack, &draft, 2).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("email_draft_sending")));
}

#[tokio::test]
async fn a_send_found_nowhere_keeps_check_send_status_and_is_never_sent_again_by_itself() {
    let mail = Mail::start().await;
    let reconcile_once = [
        ("MAIL_RECONCILE_ATTEMPTS", "1"),
        ("MAIL_RECONCILE_SPACING_SECONDS", "0"),
    ];
    let (stack, thread, _) = mailbox(&mail, &reconcile_once).await;
    let draft = reply(&stack, &thread, "Friday works.").await;
    // The connection drops before the provider took anything.
    mail.gmail.fail_next_send(SendFault::DropUnsent);
    review(&stack, &draft, 2).await;
    let waiting = send_reaches(&stack, &draft, &["awaiting_approval"]).await;
    stack.decide_ok(&waiting["send"]["approval"], "approve_once").await;
    let unconfirmed = send_reaches(&stack, &draft, &["unconfirmed"]).await;
    assert_eq!(unconfirmed["send"]["code"], "mail.outcome_unknown");
    // The row asks the owner to look: nothing proves it was not sent.
    let row = stack.get(&format!("/v1/email/threads/{thread}")).await;
    assert_eq!(row["state"], "check_send_status");
    assert_eq!(sends(&mail.gmail), 1, "tried once, never again");
    assert!(delivered_to_ada(&mail).is_empty());
    // Only the owner's own new Review & Send, approved again, would send it.
    let (status, again) = review(&stack, &draft, 2).await;
    assert_eq!(status, 202, "{again}");
    assert_ne!(again["send"]["run_id"], unconfirmed["send"]["run_id"]);
    assert_eq!(sends(&mail.gmail), 1);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
