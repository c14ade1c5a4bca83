//! The trust promises of runs: a call runs only under an approval of exactly it (a forged
//! `approved` state is refused and never made), an approval shows the whole of what it approves
//! (long strings cut and proven by their digests), and streamed output is sealed from every other
//! role's database login.

use crate::support::Stack;

/// Requeues `run` as though its parked call had been approved, without any approval saying so:
/// what a login that may update calls and runs (the api's) could forge.
async fn requeue_forged(pool: &sqlx::PgPool, run: &str) {
    let run: uuid::Uuid = run.parse().expect("run id");
    sqlx::query("UPDATE tool_invocations SET state = 'approved', updated_at = now() WHERE run_id = $1")
        .bind(run)
        .execute(pool)
        .await
        .expect("forge the call's state");
    sqlx::query(
        "UPDATE runs SET state = 'queued', updated_at = now(), working_since = now(),
             deadline_at = now() + interval '10 minutes' WHERE id = $1",
    )
    .bind(run)
    .execute(pool)
    .await
    .expect("requeue the run");
}

/// Whether `statement`, run as some login, is refused for want of a privilege.
async fn denied(pool: &sqlx::PgPool, statement: &str) -> bool {
    match sqlx::raw_sql(statement).execute(pool).await {
        Err(sqlx::Error::Database(error)) => error.code().as_deref() == Some("42501"),
        other => panic!("`{statement}` was not refused: {other:?}"),
    }
}

#[tokio::test]
async fn a_call_marked_approved_without_its_approval_is_refused_and_never_made() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let api = sqlx::PgPool::connect(&stack.db.url_as("api")).await.expect("api login");

    // The api login cannot record a call in a state of its choosing, nor change what a call or
    // an approval holds.
    assert!(
        denied(
            &api,
            "INSERT INTO tool_invocations (id, run_id, session_id, step, position, call_id, tool, arguments, state)
             VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 1, 0, 'c', 'notes.add', '{}', 'approved')"
        )
        .await
    );
    assert!(denied(&api, "UPDATE tool_invocations SET arguments = '{}' WHERE false").await);
    assert!(denied(&api, "UPDATE tool_invocations SET tool = 'notes.add' WHERE false").await);
    assert!(denied(&api, "UPDATE approvals SET arguments = '{}' WHERE false").await);
    assert!(denied(&api, "UPDATE approvals SET argument_digests = '{}' WHERE false").await);
    // What a browser action's approval offers is the worker's too.
    assert!(denied(&api, "UPDATE approvals SET task_offer = '{}' WHERE false").await);

    // It can still write a call's state: forged past the pending approval, the call is refused.
    let session = stack.session().await;
    let run = stack.submit(&session, r#"/tool notes.add {"text": "forged"}"#).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    requeue_forged(&api, &run).await;
    stack.completes(&run).await;
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 0, "never made");
    let (state, code): (String, String) =
        sqlx::query_as("SELECT state, code FROM tool_invocations WHERE tool = 'notes.add'")
            .fetch_one(&stack.db.pool)
            .await
            .expect("the call");
    assert_eq!(
        (state.as_str(), code.as_str()),
        ("failed", agent::executor::APPROVAL_MISSING)
    );
    let events = stack.events(&session).await;
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    assert!(!kinds.contains(&"tool.started"), "{kinds:?}");
    let result = events
        .iter()
        .find(|(kind, _)| kind == "tool.result")
        .expect("the model is told");
    assert_eq!(result.1["status"], "failed");

    // An approval of other arguments does not cover the call either (arguments changed behind
    // the approval, here by the database owner).
    let session = stack.session().await;
    let run = stack
        .submit(&session, r#"/tool notes.add {"text": "approved text"}"#)
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let run_id: uuid::Uuid = run.parse().expect("run id");
    sqlx::query(
        "UPDATE approvals SET status = 'APPROVED', approved_for = 'once', decided_at = now() WHERE run_id = $1",
    )
    .bind(run_id)
    .execute(&stack.db.pool)
    .await
    .expect("approve");
    sqlx::query("UPDATE tool_invocations SET arguments = '{\"text\": \"other text\"}' WHERE run_id = $1")
        .bind(run_id)
        .execute(&stack.db.pool)
        .await
        .expect("change the arguments");
    requeue_forged(&stack.db.pool, &run).await;
    stack.completes(&run).await;
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 0, "never made");
    let code: String = sqlx::query_scalar("SELECT code FROM tool_invocations WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(&stack.db.pool)
        .await
        .expect("the call");
    assert_eq!(code, agent::executor::APPROVAL_MISSING);
}

/// What `listener` heard until it stayed quiet for a moment: (channel, payload).
async fn heard(listener: &mut sqlx::postgres::PgListener) -> Vec<(String, String)> {
    let mut heard = Vec::new();
    while let Ok(Ok(notification)) = tokio::time::timeout(std::time::Duration::from_millis(300), listener.recv()).await
    {
        heard.push((notification.channel().to_owned(), notification.payload().to_owned()));
    }
    heard
}

#[tokio::test]
async fn streamed_output_is_sealed_from_every_other_roles_login() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let channels = [
        store::EVENTS_CHANNEL,
        store::RUNS_CHANNEL,
        store::TRANSIENT_CHANNEL,
        store::CALL_RECEIPTS_CHANNEL,
    ];
    let others: Vec<&str> = store::policies::ROLE_LOGINS
        .iter()
        .map(|(role, _)| *role)
        .filter(|role| !matches!(*role, "api" | "worker"))
        .collect();
    assert!(others.len() >= 6, "{others:?}");
    let mut listeners = Vec::new();
    for role in &others {
        let mut listener = sqlx::postgres::PgListener::connect(&stack.db.url_as(role))
            .await
            .unwrap_or_else(|error| panic!("{role} connects: {error}"));
        listener.listen_all(channels).await.expect("LISTEN");
        // None of them may read the key the notices are sealed under.
        let pool = sqlx::PgPool::connect(&stack.db.url_as(role)).await.expect("connect");
        assert!(
            denied(&pool, "SELECT key FROM stream_keys").await,
            "{role} reads the stream key"
        );
        listeners.push((*role, listener));
    }

    let session = stack.session().await;
    let marker = "Zanzibar-marmalade-7f3a";
    // Open on the idle session first, so no delta goes out before the stream listens.
    let mut stream = crate::support::Stream::open(&stack, &session).await;
    let run = stack.submit(&session, &format!("Tell me about {marker} please")).await;
    let mut streamed = String::new();
    while let Some((id, kind, data)) = stream.next().await {
        if id.is_none() && kind == "assistant.delta" {
            streamed.push_str(data["text"].as_str().unwrap_or_default());
        }
    }
    stack.completes(&run).await;
    assert!(
        streamed.contains(marker),
        "the owner's stream got the answer: {streamed:?}"
    );

    let mut sealed = 0;
    for (role, listener) in &mut listeners {
        for (channel, payload) in heard(listener).await {
            for word in [marker, "Zanzibar", "You said", "Reading the latest"] {
                assert!(!payload.contains(word), "{role} read {word:?} on {channel}: {payload}");
            }
            if channel == store::TRANSIENT_CHANNEL {
                assert!(payload.starts_with("v1 "), "{payload}");
                sealed += 1;
            }
        }
    }
    assert!(
        sealed > 0,
        "the other logins heard the sealed notices, and nothing of them"
    );

    // Nor can they inject text into the owner's view: a plain notice, and a sealed one sent
    // again, are dropped; the stream shows only what the worker sealed.
    let session = stack.session().await;
    let mut stream_listener = sqlx::postgres::PgListener::connect(&stack.db.url_as("notify"))
        .await
        .expect("connect");
    stream_listener.listen(store::TRANSIENT_CHANNEL).await.expect("LISTEN");
    let mut stream = crate::support::Stream::open(&stack, &session).await;
    let run = stack.submit(&session, "Second answer").await;
    let notify = sqlx::PgPool::connect(&stack.db.url_as("notify"))
        .await
        .expect("connect");
    let forged = serde_json::json!({
        "session_id": session,
        "kind": "assistant.delta",
        "run_id": run,
        "text": " INJECTED",
    })
    .to_string();
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(store::TRANSIENT_CHANNEL)
        .bind(&forged)
        .execute(&notify)
        .await
        .expect("a login may NOTIFY");
    let mut texts = String::new();
    let mut reasoning = 0;
    let mut replayed = false;
    while let Some((id, kind, data)) = stream.next().await {
        if id.is_none() && kind == "assistant.delta" {
            texts.push_str(data["text"].as_str().unwrap_or_default());
        }
        if id.is_none() && kind == "reasoning.delta" {
            reasoning += 1;
        }
        if !replayed
            && let Ok(Ok(notification)) =
                tokio::time::timeout(std::time::Duration::from_millis(50), stream_listener.recv()).await
        {
            // Sent again at once by another login: the api has opened it already.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(store::TRANSIENT_CHANNEL)
                .bind(notification.payload())
                .execute(&notify)
                .await
                .expect("NOTIFY");
            replayed = true;
        }
    }
    stack.completes(&run).await;
    assert!(replayed, "a sealed notice was captured and sent again");
    // (Whether the API judged the copy before the stream closed depends on timing; the opener's
    // own tests refuse copies deterministically: `sealed::tests::…_opens_only_under_the_stream_key_and_once`.)
    assert!(!texts.contains("INJECTED"), "{texts:?}");
    assert_eq!(texts.matches("Second").count(), 1, "no delta twice: {texts:?}");
    assert_eq!(reasoning, 1, "the notice sent again was dropped");
}

#[tokio::test]
async fn long_arguments_are_truncated_in_the_approval_with_a_digest_of_the_whole_value() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let long = "é".repeat(600);
    let run = stack
        .submit(&session, &format!(r#"/tool notes.add {{"text": "{long}"}}"#))
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    assert_eq!(
        approval["arguments"]["text"].as_str().map(|text| text.chars().count()),
        Some(512)
    );
    let digest = approval["argument_digests"]["/text"]
        .as_str()
        .expect("digest")
        .to_owned();
    let expected: String = sha2::Digest::finalize(sha2::Digest::chain_update(
        <sha2::Sha256 as sha2::Digest>::new(),
        long.as_bytes(),
    ))
    .iter()
    .map(|byte| format!("{byte:02x}"))
    .collect();
    assert_eq!(digest, expected);
    // The tool still receives the whole value once approved.
    let id = approval["approval_id"].as_str().expect("id").to_owned();
    assert_eq!(stack.decide(&id, "approve_once").await.status(), 200);
    stack.completes(&run).await;
    assert_eq!(stack.scalar::<String>("SELECT text FROM notes").await, long);
}
