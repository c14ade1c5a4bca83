//! Runs driven by the scripted provider: approve, deny, questions, limits, deadlines, streams,
//! filing proposals and several workers sharing the queue.

use reqwest::Method;
use serde_json::json;

use crate::support::{Stack, json};

#[tokio::test]
async fn an_approved_tool_runs_exactly_once_and_the_run_completes() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, r#"/tool notes.add {"text": "buy milk"}"#).await;

    let parked = stack.wait_for(&run, &["waiting_approval"]).await;
    assert_eq!(parked["status"], "needs_approval");
    let approvals = stack.pending_approvals(&session).await;
    assert_eq!(approvals.len(), 1);
    let approval = &approvals[0];
    assert_eq!(
        (
            approval["tool"].as_str(),
            approval["status"].as_str(),
            approval["risk"].as_str()
        ),
        (Some("notes.add"), Some("PENDING"), Some("medium"))
    );
    assert_eq!(approval["arguments"], json!({ "text": "buy milk" }));
    assert_eq!(
        stack.scalar::<i64>("SELECT count(*) FROM notes").await,
        0,
        "nothing happens before approval"
    );
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM notification_outbox WHERE kind = 'approval' AND obsolete_at IS NULL")
            .await,
        1
    );

    let id = approval["approval_id"].as_str().expect("id");
    let (status, decided) = json(stack.decide(id, "approve_once").await).await;
    assert_eq!((status, decided["status"].as_str()), (200, Some("APPROVED")));
    let late = stack.decide(id, "deny").await;
    let (status, problem) = json(late).await;
    assert_eq!(
        (status, problem["code"].as_str(), problem["resolution"].as_str()),
        (409, Some("approval_already_resolved"), Some("APPROVED"))
    );

    stack.completes(&run).await;
    assert_eq!(
        stack.scalar::<i64>("SELECT count(*) FROM notes").await,
        1,
        "the tool ran exactly once"
    );
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM notification_outbox WHERE obsolete_at IS NULL")
            .await,
        0
    );
    let kinds: Vec<String> = stack.events(&session).await.into_iter().map(|(kind, _)| kind).collect();
    assert_eq!(
        kinds,
        [
            "user.message.created",
            "assistant.message",
            "approval.requested",
            "approval.resolved",
            "tool.started",
            "tool.result",
            "assistant.message",
            "run.completed"
        ]
    );
    let events = stack.events(&session).await;
    assert_eq!(events[5].1["status"], "succeeded");
    assert!(
        events[6].1["text"]
            .as_str()
            .expect("text")
            .starts_with("notes.add returned:")
    );
    assert!(stack.pending_approvals(&session).await.is_empty());
}

#[tokio::test]
async fn a_denied_tool_never_runs_and_the_model_is_told() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, r#"/tool notes.add {"text": "secret"}"#).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await[0]["approval_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, decided) = json(stack.decide(&approval, "deny").await).await;
    assert_eq!((status, decided["status"].as_str()), (200, Some("DENIED")));

    stack.completes(&run).await;
    assert_eq!(
        stack.scalar::<i64>("SELECT count(*) FROM notes").await,
        0,
        "a denied tool never runs"
    );
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM tool_invocations WHERE state = 'dispatching' OR state = 'succeeded'")
            .await,
        0
    );
    assert_eq!(
        stack.first_outcome(&session).await,
        (Some("denied".into()), Some("approval.denied".into()))
    );
    let reply = stack.reply(&session).await;
    assert!(
        reply["text"].as_str().expect("text").contains("denied"),
        "the model was told: {}",
        reply
    );
}

#[tokio::test]
async fn a_question_waits_for_the_displayed_question_id() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "/ask Which day suits you?").await;
    let waiting = stack.wait_for(&run, &["waiting_input"]).await;
    assert_eq!(waiting["status"], "needs_answer");
    let events = stack.events(&session).await;
    let asked = events
        .iter()
        .find(|(kind, _)| kind == "question.asked")
        .expect("question");
    assert_eq!(asked.1["text"], "Which day suits you?");
    let question = asked.1["question_id"].as_str().expect("id").to_owned();

    let answer = |question_id: String| {
        stack
            .request(Method::POST, &format!("/v1/runs/{run}/input"))
            .json(&json!({ "question_id": question_id, "text": "Tuesday" }))
            .send()
    };
    let (status, problem) = json(answer(uuid::Uuid::new_v4().to_string()).await.expect("send")).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("question_not_pending")),
        "a wrong id is refused"
    );
    let (status, resumed) = json(answer(question.clone()).await.expect("send")).await;
    assert_eq!(status, 200);
    assert!(["queued", "running", "completed"].contains(&resumed["state"].as_str().expect("state")));
    let (status, problem) = json(answer(question).await.expect("send")).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("question_not_pending")),
        "a stale id is refused"
    );

    stack.completes(&run).await;
    let reply = stack.reply(&session).await;
    assert!(reply["text"].as_str().expect("text").contains("Tuesday"), "{}", reply);
}

#[tokio::test]
async fn read_only_tools_run_without_approval_and_plain_text_completes() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "/tool notes.list").await;
    stack.completes(&run).await;
    assert!(stack.pending_approvals(&session).await.is_empty());

    let run = stack.submit(&session, "hello there").await;
    stack.completes(&run).await;
    let reply = stack.reply(&session).await;
    assert_eq!(reply["text"], "You said: hello there");

    let run = stack.submit(&session, "/tool no.such.tool").await;
    stack.completes(&run).await;
    let results = stack.tool_results(&session).await;
    assert_eq!(results.last().expect("a result")["code"], "tool.unknown");
}

#[tokio::test]
async fn limits_fail_the_run_with_a_code() {
    let mut stack = Stack::api(&[("RUN_MAX_STEPS", "1")]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "/tool notes.list").await;
    let failed = stack.wait_for(&run, &["completed", "failed"]).await;
    assert_eq!(
        (failed["state"].as_str(), failed["reason"].as_str()),
        (Some("failed"), Some("limit.max_steps"))
    );
    let last = stack.events(&session).await.pop().expect("event");
    assert_eq!(
        (last.0.as_str(), last.1["code"].as_str()),
        ("run.failed", Some("limit.max_steps"))
    );
}

#[tokio::test]
async fn a_run_that_waits_past_its_agents_waiting_expiry_is_cancelled_with_reason_deadline() {
    // The agent lets its runs wait one second for the owner.
    let agents = json!([{ "id": "default", "instructions": "Be helpful.",
        "model": { "provider": "scripted", "model": "scripted-1" }, "wait_timeout_seconds": 1 }]);
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &agents.to_string())]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, r#"/tool notes.add {"text": "too late"}"#).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await[0]["approval_id"]
        .as_str()
        .expect("id")
        .to_owned();

    let cancelled = stack.wait_for(&run, &["cancelled", "completed", "failed"]).await;
    assert_eq!(
        (cancelled["state"].as_str(), cancelled["reason"].as_str()),
        (Some("cancelled"), Some("deadline"))
    );
    let last = stack.events(&session).await.pop().expect("event");
    assert_eq!(
        (last.0.as_str(), last.1["reason"].as_str()),
        ("run.cancelled", Some("deadline"))
    );
    let (status, problem) = json(stack.decide(&approval, "approve_once").await).await;
    assert_eq!(
        (status, problem["resolution"].as_str()),
        (409, Some("EXPIRED")),
        "a late decision executes nothing"
    );
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 0);
}

#[tokio::test]
async fn cancelling_a_parked_run_cancels_its_approval() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, r#"/tool notes.add {"text": "never"}"#).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await[0]["approval_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let cancel = stack
        .request(Method::POST, &format!("/v1/runs/{run}/cancel"))
        .send()
        .await
        .expect("send");
    assert_eq!(cancel.status(), 200);
    let (status, problem) = json(stack.decide(&approval, "approve_once").await).await;
    assert_eq!((status, problem["resolution"].as_str()), (409, Some("CANCELLED")));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(stack.run(&run).await["state"], "cancelled");
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 0);
}

#[tokio::test]
async fn the_stream_carries_the_whole_run_with_transient_deltas_and_closes_after_it() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, r#"/tool notes.add {"text": "stream it"}"#).await;
    let mut stream = crate::support::Stream::open(&stack, &session).await;
    let mut frames = Vec::new();
    while let Some(frame) = stream.next().await {
        let approval_requested = frame.1 == "approval.requested";
        if approval_requested {
            let id = frame.2["payload"]["approval_id"]
                .as_str()
                .expect("approval id")
                .to_owned();
            assert_eq!(stack.decide(&id, "approve_once").await.status(), 200);
        }
        frames.push(frame);
    }
    let persisted: Vec<(i64, &str)> = frames
        .iter()
        .filter_map(|(id, kind, _)| id.map(|id| (id, kind.as_str())))
        .collect();
    let ids: Vec<i64> = persisted.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as i64).collect::<Vec<_>>(),
        "contiguous, no gap, no duplicate"
    );
    assert_eq!(
        persisted.last().map(|(_, kind)| *kind),
        Some("run.completed"),
        "the stream closes after the terminal event"
    );
    assert_eq!(stack.run(&run).await["state"], "completed");

    // Transient deltas carry no id and arrive before the message they belong to is persisted.
    let last_reply = frames
        .iter()
        .rposition(|(_, kind, _)| kind == "assistant.message")
        .expect("reply");
    let deltas: String = frames[..last_reply]
        .iter()
        .filter(|(id, kind, _)| kind == "assistant.delta" && id.is_none())
        .map(|(_, _, data)| data["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(deltas.starts_with("notes.add returned:"), "deltas: {deltas:?}");
    assert!(
        frames
            .iter()
            .any(|(id, kind, _)| kind == "reasoning.delta" && id.is_none())
    );
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM events WHERE kind LIKE '%delta'")
            .await,
        0,
        "transient output is never persisted"
    );

    // The persisted sequence, as every client reads it: a change of the wire format (a kind, a
    // member, a spelling) shows here as a diff. Ids and times are numbered by first appearance.
    let mut names = Placeholders::default();
    let rendered: String = frames
        .iter()
        .filter_map(|(id, kind, data)| Some(format!("{} {kind} {}\n", (*id)?, names.render(data))))
        .collect();
    expect_test::expect![[r#"
        1 user.message.created {"created_at":"<time>","kind":"user.message.created","payload":{"message":{"attachments":[],"text":"/tool notes.add {\"text\": \"stream it\"}"},"run_id":"<id 0>"},"run_id":"<id 0>","seq":1}
        2 assistant.message {"created_at":"<time>","kind":"assistant.message","payload":{"run_id":"<id 0>","step":1,"text":"","tool_calls":[{"arguments":{"text":"stream it"},"call_id":"call_1_1","tool":"notes.add"}],"usage":{"cost":"0","input_tokens":45,"output_tokens":5}},"run_id":"<id 0>","seq":2}
        3 approval.requested {"created_at":"<time>","kind":"approval.requested","payload":{"approval_id":"<id 1>","argument_digests":{},"arguments":{"text":"stream it"},"invocation_id":"<id 2>","risk":"medium","run_id":"<id 0>","status":"PENDING","tool":"notes.add"},"run_id":"<id 0>","seq":3}
        4 approval.resolved {"created_at":"<time>","kind":"approval.resolved","payload":{"approval_id":"<id 1>","approved_for":"once","invocation_id":"<id 2>","run_id":"<id 0>","status":"APPROVED","tool":"notes.add"},"run_id":"<id 0>","seq":4}
        5 tool.started {"created_at":"<time>","kind":"tool.started","payload":{"call_id":"call_1_1","invocation_id":"<id 2>","risk":"medium","run_id":"<id 0>","tool":"notes.add"},"run_id":"<id 0>","seq":5}
        6 tool.result {"created_at":"<time>","kind":"tool.result","payload":{"call_id":"call_1_1","code":null,"invocation_id":"<id 2>","result":{"note_id":"<id 3>"},"risk":"medium","run_id":"<id 0>","status":"succeeded","tool":"notes.add","trust":"tool_output"},"run_id":"<id 0>","seq":6}
        7 assistant.message {"created_at":"<time>","kind":"assistant.message","payload":{"run_id":"<id 0>","step":2,"text":"notes.add returned: {\"code\":null,\"result\":{\"note_id\":\"<id 3>\"},\"status\":\"succeeded\"}","tool_calls":[],"usage":{"cost":"0","input_tokens":94,"output_tokens":29}},"run_id":"<id 0>","seq":7}
        8 run.completed {"created_at":"<time>","kind":"run.completed","payload":{"run_id":"<id 0>","state":"completed","usage":{"cost":"0","input_tokens":139,"model_calls":2,"output_tokens":34,"steps":2,"tool_calls":1}},"run_id":"<id 0>","seq":8}
    "#]]
    .assert_eq(&rendered);
}

/// Replaces ids and timestamps in frame data with stable names, in order of first appearance.
#[derive(Default)]
struct Placeholders {
    ids: Vec<String>,
}

impl Placeholders {
    fn render(&mut self, data: &serde_json::Value) -> String {
        self.replace(data).to_string()
    }

    /// `text` with every id in it (whole or inside, such as a tool result quoted in a reply)
    /// replaced by its name.
    fn ids_in(&mut self, text: &str) -> String {
        const LENGTH: usize = 36;
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while !rest.is_empty() {
            let candidate = rest.get(..LENGTH).filter(|slice| uuid::Uuid::try_parse(slice).is_ok());
            if let Some(id) = candidate {
                let position = match self.ids.iter().position(|known| known == id) {
                    Some(position) => position,
                    None => {
                        self.ids.push(id.to_owned());
                        self.ids.len() - 1
                    }
                };
                out.push_str(&format!("<id {position}>"));
                rest = &rest[LENGTH..];
            } else {
                let next = rest.chars().next().map_or(1, char::len_utf8);
                out.push_str(&rest[..next]);
                rest = &rest[next..];
            }
        }
        out
    }

    fn replace(&mut self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(text) if text.parse::<jiff::Timestamp>().is_err() => Value::String(self.ids_in(text)),
            Value::String(text) if text.parse::<jiff::Timestamp>().is_ok() => Value::String("<time>".into()),
            Value::Array(items) => Value::Array(items.iter().map(|item| self.replace(item)).collect()),
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(name, member)| (name.clone(), self.replace(member)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

#[tokio::test]
async fn several_workers_share_the_queue_and_each_run_is_claimed_once() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[("WORKER_CONCURRENCY", "2")]).await;
    stack.start_worker(&[("WORKER_CONCURRENCY", "2")]).await;
    stack.start_worker(&[("WORKER_CONCURRENCY", "2")]).await;
    let mut runs = Vec::new();
    for index in 0..24 {
        let session = stack.session().await;
        runs.push(stack.submit(&session, &format!("message {index}")).await);
    }
    for run in &runs {
        stack.completes(run).await;
    }
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM runs WHERE attempts <> 1")
            .await,
        0,
        "no run was claimed twice"
    );
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM events WHERE kind = 'assistant.message'")
            .await,
        24
    );
    let owners: i64 = stack.scalar("SELECT count(DISTINCT lease_owner) FROM runs").await;
    assert_eq!(owners, 0, "finished runs hold no lease");
}

#[tokio::test]
async fn the_cost_limit_fails_the_run() {
    let definitions = crate::support::agent_definitions(
        json!({ "provider": "scripted", "model": "scripted-1", "input_cost_per_mtok": "1000", "output_cost_per_mtok": "1000" }),
        None,
    );
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions), ("RUN_MAX_COST", "0.001")]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack
        .submit(
            &session,
            "a message long enough to cost more than a tenth of a cent at these prices",
        )
        .await;
    let failed = stack.wait_for(&run, &["completed", "failed"]).await;
    assert_eq!(
        (failed["state"].as_str(), failed["reason"].as_str()),
        (Some("failed"), Some("limit.max_cost"))
    );
    assert_eq!(failed["limits"]["max_cost"], "0.001");
}

/// The result of the last `tool.result` event of `session`.
async fn last_tool_result(stack: &Stack, session: &str) -> serde_json::Value {
    let results = stack.tool_results(session).await;
    results.last().expect("a tool result").clone()
}

#[tokio::test]
async fn the_agent_proposes_filing_without_approval_and_nothing_moves_until_the_owner_accepts() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let (trip, hotel, chat) = (stack.session().await, stack.session().await, stack.session().await);
    let scheduled = stack.session().await;
    let marked: i32 = stack
        .scalar(&format!(
            "UPDATE sessions SET schedule_id = gen_random_uuid() WHERE id = '{scheduled}' RETURNING 1"
        ))
        .await;
    assert_eq!(marked, 1);

    let run = stack.submit(&chat, "/tool folders.list").await;
    stack.completes(&run).await;
    let listed = last_tool_result(&stack, &chat).await;
    assert_eq!(listed["status"], "succeeded", "{listed}");
    let unfiled: Vec<&str> = listed["result"]["unfiled_conversations"]
        .as_array()
        .expect("unfiled")
        .iter()
        .map(|row| row["session_id"].as_str().expect("id"))
        .collect();
    assert!(unfiled.contains(&trip.as_str()) && unfiled.contains(&hotel.as_str()));
    assert!(
        !unfiled.contains(&scheduled.as_str()),
        "scheduled sessions are never offered"
    );

    let propose = json!({ "folder_name": "Trip", "session_ids": [trip, hotel, scheduled] });
    let run = stack.submit(&chat, &format!("/tool folders.propose {propose}")).await;
    stack.completes(&run).await;
    let proposed = last_tool_result(&stack, &chat).await;
    assert_eq!(proposed["status"], "succeeded", "{proposed}");
    assert_eq!(proposed["result"]["session_ids"], json!([trip, hotel]));
    assert_eq!(
        proposed["result"]["left_out"],
        json!([{ "session_id": scheduled, "reason": "scheduled" }])
    );
    assert_eq!(
        stack.get(&format!("/v1/sessions/{trip}")).await["folder_id"],
        json!(null)
    );

    let proposals = stack.get("/v1/folder-proposals").await;
    let proposal = &proposals["proposals"][0];
    assert_eq!(proposal["proposal_id"], proposed["result"]["proposal_id"]);
    assert_eq!(
        (proposal["name"].as_str(), &proposal["folder_id"]),
        (Some("Trip"), &json!(null))
    );
    let accepted = stack
        .request(
            Method::POST,
            &format!(
                "/v1/folder-proposals/{}/accept",
                proposal["proposal_id"].as_str().expect("id")
            ),
        )
        .send()
        .await
        .expect("send");
    let (status, accepted) = json(accepted).await;
    assert_eq!(status, 200, "{accepted}");
    for session in [&trip, &hotel] {
        assert_eq!(
            stack.get(&format!("/v1/sessions/{session}")).await["folder_id"],
            accepted["folder"]["folder_id"]
        );
    }

    // Proposing them again is refused with the reasons: they are filed now.
    let run = stack.submit(&chat, &format!("/tool folders.propose {propose}")).await;
    stack.completes(&run).await;
    let refused = last_tool_result(&stack, &chat).await;
    assert_eq!(
        (refused["status"].as_str(), refused["code"].as_str()),
        (Some("failed"), Some("folders.nothing_to_propose")),
        "{refused}"
    );
}

#[tokio::test]
async fn with_every_wake_up_lost_workers_still_claim_and_finish_runs_by_polling() {
    let mut stack = Stack::deaf(&[]).await;
    let mut guard = stack.db.wake_guard().await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    for text in ["first", "second"] {
        let submitted = std::time::Instant::now();
        let run = stack.submit(&session, text).await;
        stack.completes(&run).await;
        assert!(
            submitted.elapsed() < std::time::Duration::from_secs(3),
            "claimed within the one-second poll: {:?}",
            submitted.elapsed()
        );
    }
    let seqs: Vec<i64> = stack
        .scalar::<Vec<i64>>(&format!(
            "SELECT array_agg(seq::bigint ORDER BY seq) FROM events WHERE session_id = '{session}'"
        ))
        .await;
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    assert_eq!(stack.reply(&session).await["text"], "You said: second");
    testkit::assert_no_wake_up(&mut guard).await;
}
