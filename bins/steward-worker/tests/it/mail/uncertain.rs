//! Mail effects of unknown outcome: a send or draft whose answer proves nothing (a timeout, a
//! worker killed mid-request, a dispatch stranded on a cancelled run) is never made again, and
//! the reconciliation looks for it in the mailbox until it is found or settles `not_found`.

use super::*;

#[tokio::test]
async fn an_uncertain_send_is_never_repeated_and_reconciliation_finds_it_in_sent() {
    let mail = Mail::start().await;
    let stack = mail.stack().await;
    let session = stack.session().await;
    mail.gmail.fail_next_send(SendFault::DropConnection);
    let message = json!({ "to": "ada@example.org", "subject": "Uncertain 9f4", "body": "Sent once." });
    // The reconciliation searches Sent, read-only, and settles.
    let reconciled = unknown_then_reconciled(&stack, &session, "mcp.mail_send.send_message", &message).await;
    let events = stack.events(&session).await;
    let unknown: Vec<&Value> = events
        .iter()
        .filter(|(kind, _)| kind == "mail.outcome_unknown")
        .map(|(_, payload)| payload)
        .collect();
    assert_eq!(unknown.len(), 1, "one mail.outcome_unknown");
    assert_eq!(
        (unknown[0]["account_id"].as_str(), unknown[0]["operation"].as_str()),
        (Some("personal"), Some("send_message"))
    );
    let sent = mail.gmail.messages("personal", "SENT");
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (reconciled["state"].as_str(), reconciled["thread_id"].as_str()),
        (Some("found"), Some(sent[0].thread_id.as_str()))
    );
    // The provider gave the sent message a Message-ID of its own: the invocation header found it.
    let ours: String = stack.scalar("SELECT message_id FROM mail_reconciliations").await;
    assert_ne!(sent[0].message_id, ours, "the provider replaced the Message-ID");
    assert!(
        sent[0]
            .extra_headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(mail_mcp::message::INVOCATION_HEADER)),
        "{:?}",
        sent[0].extra_headers
    );
    assert_eq!(sends(&mail.gmail), 1, "zero repeats");
    assert_eq!(mail.gmail.messages("ada", "INBOX").len(), 1);
    let searches: Vec<(String, String, String)> = mail
        .gmail
        .calls()
        .into_iter()
        .filter(|(_, _, call)| call.starts_with("GET threads"))
        .collect();
    assert!(
        !searches.is_empty() && searches.iter().all(|(_, scope, _)| scope == READONLY),
        "reconciliation is read-only: {searches:?}"
    );
    // Nothing of the message is kept for the reconciliation.
    let row: Value = sqlx::query_scalar("SELECT to_jsonb(m) FROM mail_reconciliations m")
        .fetch_one(&stack.db.pool)
        .await
        .expect("reconciliation");
    assert!(
        !row.to_string().contains("Uncertain 9f4") && !row.to_string().contains("ada@example.org"),
        "{row}"
    );
    assert_eq!(row["state"], "found");
}

/// A `steward-worker` process with mail on, mid-dispatch of an approved send (`subject`) that
/// the provider stored and never answers; returns it (to be killed), the session and the run.
async fn a_held_send(mail: &Mail, stack: &Stack, subject: &str) -> (std::process::Child, String, String) {
    let worker = std::process::Command::new(env!("CARGO_BIN_EXE_steward-worker"))
        .envs(stack.worker_env(&[]))
        .envs(mail.worker_vars())
        .env("LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start steward-worker");
    mail.gmail.fail_next_send(SendFault::Hold);
    let session = stack.session().await;
    let message = json!({ "to": "ada@example.org", "subject": subject, "body": "Once." });
    let run = propose_and_approve(stack, &session, "mcp.mail_send.send_message", &message).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while mail.gmail.messages("personal", "SENT").is_empty() {
        assert!(std::time::Instant::now() < deadline, "the send never arrived");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    (worker, session, run)
}

#[tokio::test]
async fn a_worker_killed_mid_send_leaves_it_unrepeated_and_reconciled() {
    use std::os::unix::process::ExitStatusExt;

    let mail = Mail::start().await;
    let mut stack = mail.api("sessions.read,sessions.write").await;
    // The provider stored the message and holds its answer: the worker is mid-dispatch.
    let (mut worker, session, run) = a_held_send(&mail, &stack, "Held 3e8").await;
    let state: String = stack.scalar("SELECT state FROM tool_invocations").await;
    assert_eq!(state, "dispatching");
    worker.kill().expect("SIGKILL");
    assert_eq!(worker.wait().expect("wait").signal(), Some(9));

    // The worker that resumes the run has mail off (as after a rollback): the reconciliation
    // armed at dispatch still opens, and waits for a worker that holds the account.
    stack.start_worker(&[]).await;
    stack.completes(&run).await;
    let result = last_result(&stack, &session).await;
    assert_eq!(
        outcome(&result),
        (Some("outcome_unknown"), Some("mail.outcome_unknown")),
        "{result}"
    );
    let events = stack.events(&session).await;
    assert_eq!(
        events.iter().filter(|(kind, _)| kind == "mail.outcome_unknown").count(),
        1
    );
    let state: String = stack.scalar("SELECT state FROM mail_reconciliations").await;
    assert_eq!(state, "pending");

    mail.start_worker(&mut stack, &[]).await;
    let reconciled = reconciled(&stack, &session).await;
    assert_eq!(reconciled["state"], "found", "{reconciled}");
    assert_eq!(sends(&mail.gmail), 1, "the send was never repeated");
    assert_eq!(mail.gmail.messages("ada", "INBOX").len(), 1);
}

#[tokio::test]
async fn an_uncertain_send_that_never_happened_settles_not_found_and_is_still_not_repeated() {
    let mail = Mail::start().await;
    let mut stack = mail.api("sessions.read,sessions.write").await;
    mail.start_worker(
        &mut stack,
        &[
            ("MAIL_RECONCILE_ATTEMPTS", "3"),
            ("MAIL_RECONCILE_SPACING_SECONDS", "0"),
        ],
    )
    .await;
    mail.gmail.fail_next_send(SendFault::DropUnsent);
    let session = stack.session().await;
    let message = json!({ "to": "ada@example.org", "subject": "Lost 0a1", "body": "Never arrived." });
    let run = propose_and_approve(&stack, &session, "mcp.mail_send.send_message", &message).await;
    stack.completes(&run).await;

    let reconciled = reconciled(&stack, &session).await;
    assert_eq!(
        (reconciled["state"].as_str(), reconciled["thread_id"].as_str()),
        (Some("not_found"), None),
        "{reconciled} {:?}",
        mail.gmail.calls()
    );
    let searches: i32 = stack.scalar("SELECT searches FROM mail_reconciliations").await;
    assert_eq!(searches, 3, "it searched until the attempts ran out");
    let searches = mail
        .gmail
        .calls()
        .iter()
        .filter(|(_, scope, call)| call == "GET threads" && scope == READONLY)
        .count();
    // Per attempt: by Message-ID in Sent, then anywhere; by the invocation header among the
    // threads dated around the dispatch, in Sent, then anywhere.
    assert_eq!(searches, 3 * 4, "the same read-only searches per attempt");
    assert_eq!(sends(&mail.gmail), 1, "the send was tried once and never again");
    assert!(mail.gmail.messages("personal", "SENT").is_empty());
    assert!(mail.gmail.messages("ada", "INBOX").is_empty());
}

#[tokio::test]
async fn an_uncertain_draft_is_never_repeated_and_reconciliation_finds_it_in_drafts() {
    let mail = Mail::start().await;
    let stack = mail.stack().await;
    let session = stack.session().await;
    mail.gmail.fail_next_draft(SendFault::DropConnection);
    let draft = json!({ "to": "ada@example.org", "subject": "Uncertain draft 2b6", "body": "Once." });
    let reconciled = unknown_then_reconciled(&stack, &session, "mcp.mail_write.create_draft", &draft).await;
    let drafts = mail.gmail.messages("personal", "DRAFT");
    assert_eq!(drafts.len(), 1, "exactly one draft");
    assert_eq!(
        (reconciled["state"].as_str(), reconciled["operation"].as_str()),
        (Some("found"), Some("create_draft"))
    );
    assert_eq!(reconciled["thread_id"].as_str(), Some(drafts[0].thread_id.as_str()));
    let writes = mail
        .gmail
        .calls()
        .iter()
        .filter(|(_, _, call)| call == "POST drafts")
        .count();
    assert_eq!(writes, 1, "the draft was never repeated");
    assert!(mail.gmail.messages("personal", "SENT").is_empty());
}

#[tokio::test]
async fn a_proposal_is_checked_before_the_owner_is_asked_and_waits_for_an_open_outcome() {
    let mail = Mail::start().await;
    let mut stack = mail.api("sessions.read,sessions.write").await;
    // Searches a minute apart: the first finds nothing, and the outcome stays open meanwhile.
    mail.start_worker(&mut stack, &[("MAIL_RECONCILE_SPACING_SECONDS", "60")])
        .await;
    let session = stack.session().await;

    // A message that cannot be made is refused before any approval is asked for.
    let bad = json!({ "to": "ada@exam\u{200B}ple.org", "subject": "Hi", "body": "Text" });
    let run = stack
        .submit(&session, &format!("/tool mcp.mail_send.send_message {bad}"))
        .await;
    stack.completes(&run).await;
    let refused = last_result(&stack, &session).await;
    assert_eq!(
        outcome(&refused),
        (Some("failed"), Some("tool.invalid_arguments")),
        "{refused}"
    );
    let asked: i64 = stack.scalar("SELECT count(*) FROM approvals").await;
    assert_eq!(asked, 0, "the owner was never asked");

    // A send of unknown outcome (it never arrived) keeps the next send from this account waiting.
    mail.gmail.fail_next_send(SendFault::DropUnsent);
    let message = json!({ "to": "ada@example.org", "subject": "Lost 4c7", "body": "Once." });
    let run = propose_and_approve(&stack, &session, "mcp.mail_send.send_message", &message).await;
    stack.completes(&run).await;
    let state: String = stack.scalar("SELECT state FROM mail_reconciliations").await;
    assert_eq!(state, "pending");

    let again = json!({ "to": "ada@example.org", "subject": "Lost 4c7 (again)", "body": "Once." });
    let run = stack
        .submit(&session, &format!("/tool mcp.mail_send.send_message {again}"))
        .await;
    stack.completes(&run).await;
    let held = last_result(&stack, &session).await;
    assert_eq!(
        outcome(&held),
        (Some("failed"), Some("mail.reconciliation_pending")),
        "{held}"
    );
    let asked: i64 = stack.scalar("SELECT count(*) FROM approvals").await;
    assert_eq!(asked, 1, "only the first send was proposed");

    // A send from another account, or a draft, is not held back.
    let draft = json!({ "to": "ada@example.org", "subject": "Draft meanwhile", "body": "Fine." });
    for proposal in [
        format!("/tool mcp.mail_work_send.send_message {message}"),
        format!("/tool mcp.mail_write.create_draft {draft}"),
    ] {
        let run = stack.submit(&session, &proposal).await;
        stack.wait_for(&run, &["waiting_approval"]).await;
        let approvals = stack.pending_approvals(&session).await;
        assert!(
            proposal.contains(approvals[0]["tool"].as_str().expect("tool")),
            "{proposal}"
        );
        stack.decide_ok(&approvals[0], "deny").await;
        stack.completes(&run).await;
    }
    assert_eq!(sends(&mail.gmail), 1, "nothing was sent again");
}

#[tokio::test]
async fn a_dispatch_stranded_on_a_cancelled_run_by_a_dead_worker_is_settled_and_reconciled() {
    use std::os::unix::process::ExitStatusExt;

    let mail = Mail::start().await;
    let mut stack = mail.api("sessions.read,sessions.write").await;
    let (mut worker, session, run) = a_held_send(&mail, &stack, "Stranded 8d2").await;
    // The owner cancels the run mid-dispatch, and then its worker dies: no execution resumes it.
    assert_eq!(stack.cancel(&run).await, 200);
    worker.kill().expect("SIGKILL");
    assert_eq!(worker.wait().expect("wait").signal(), Some(9));
    assert_eq!(stack.run(&run).await["state"], "cancelled");
    let state: String = stack.scalar("SELECT state FROM tool_invocations").await;
    assert_eq!(state, "dispatching");

    let store = stack.db.store_as("worker").await;
    // Younger than the threshold: left alone (its worker might still be waiting on it).
    assert_eq!(
        store.work().settle_stranded_dispatches(3600, 16).await.expect("sweep"),
        0
    );
    assert_eq!(store.work().settle_stranded_dispatches(0, 16).await.expect("sweep"), 1);
    assert_eq!(
        store.work().settle_stranded_dispatches(0, 16).await.expect("sweep"),
        0,
        "once"
    );
    let result = last_result(&stack, &session).await;
    assert_eq!(
        outcome(&result),
        (Some("outcome_unknown"), Some("mail.outcome_unknown")),
        "{result}"
    );
    mail.start_worker(&mut stack, &[]).await;
    let reconciled = reconciled(&stack, &session).await;
    assert_eq!(reconciled["state"], "found", "{reconciled}");
    assert_eq!(sends(&mail.gmail), 1, "never repeated");
}

#[tokio::test]
async fn a_send_that_kept_its_message_id_is_found_by_it_without_reading_threads() {
    let mail = Mail::start().await;
    mail.gmail.keep_sent_message_ids();
    let stack = mail.stack().await;
    let session = stack.session().await;
    mail.gmail.fail_next_send(SendFault::DropConnection);
    let message = json!({ "to": "ada@example.org", "subject": "Kept id 1f9", "body": "Once." });
    let run = propose_and_approve(&stack, &session, "mcp.mail_send.send_message", &message).await;
    stack.completes(&run).await;
    let reconciled = reconciled(&stack, &session).await;
    let sent = mail.gmail.messages("personal", "SENT");
    assert_eq!(
        (reconciled["state"].as_str(), reconciled["thread_id"].as_str()),
        (Some("found"), Some(sent[0].thread_id.as_str()))
    );
    let ours: String = stack.scalar("SELECT message_id FROM mail_reconciliations").await;
    assert_eq!(sent[0].message_id, ours);
    let calls = mail.gmail.calls();
    let lists: Vec<&(String, String, String)> = calls.iter().filter(|(_, _, call)| call == "GET threads").collect();
    assert_eq!(lists.len(), 1, "one search by Message-ID in Sent found it: {calls:?}");
    assert!(
        !calls.iter().any(|(_, _, call)| call == "GET threads/{id}"),
        "no header scan was needed: {calls:?}"
    );
    assert_eq!(sends(&mail.gmail), 1);
}

#[tokio::test]
async fn a_reconciliation_that_cannot_search_settles_not_found_and_never_repeats() {
    let mail = Mail::start().await;
    let mut stack = mail.api("sessions.read,sessions.write").await;
    mail.start_worker(
        &mut stack,
        &[
            ("MAIL_RECONCILE_ATTEMPTS", "2"),
            ("MAIL_RECONCILE_SPACING_SECONDS", "0"),
        ],
    )
    .await;
    // The read grant was revoked: the mailbox cannot be searched, and waiting will not change it.
    mail.gmail.revoke(mail.refresh_token("personal", 0));
    mail.gmail.fail_next_send(SendFault::DropConnection);
    let session = stack.session().await;
    let message = json!({ "to": "ada@example.org", "subject": "Unsearchable 6a0", "body": "Once." });
    let run = propose_and_approve(&stack, &session, "mcp.mail_send.send_message", &message).await;
    stack.completes(&run).await;
    let reconciled = reconciled(&stack, &session).await;
    assert_eq!(reconciled["state"], "not_found", "{reconciled}");
    let searches: i32 = stack.scalar("SELECT searches FROM mail_reconciliations").await;
    assert_eq!(searches, 2, "each refused search counted");
    assert_eq!(mail.gmail.messages("personal", "SENT").len(), 1, "it had been sent");
    assert_eq!(sends(&mail.gmail), 1, "and was never sent again");
}

/// Proposes and approves `tool` with `arguments` in `session`, runs it to its end, checks that
/// its outcome is unknown (`mail.outcome_unknown`) and returns its reconciliation once settled.
async fn unknown_then_reconciled(stack: &Stack, session: &str, tool: &str, arguments: &Value) -> Value {
    let run = propose_and_approve(stack, session, tool, arguments).await;
    stack.completes(&run).await;
    let result = last_result(stack, session).await;
    assert_eq!(
        outcome(&result),
        (Some("outcome_unknown"), Some("mail.outcome_unknown")),
        "{result}"
    );
    reconciled(stack, session).await
}
