//! Logs you can follow: one run's lines in the API and the worker all carry its id (the API's
//! request span and its "run queued" line, the worker's `run{run_id …}` span around every step,
//! model call and tool dispatch), and none of them carries what the owner wrote.

use crate::support::Stack;

#[tokio::test]
async fn one_run_is_followed_across_the_api_and_the_worker_by_its_id_and_no_content_is_logged() {
    // The roles' own format (`role::run`): spans as context, no colours.
    let logs = testkit::logs::Captured::default();
    let _installed = logs.install();

    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack
        .submit(&session, r#"/tool notes.add {"text": "Call the plumber on Tuesday"}"#)
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    stack.decide_ok(&approval, "approve_once").await;
    assert_eq!(stack.completes(&run).await["state"], "completed");

    let text = logs.text();
    let lines: Vec<&str> = text.lines().filter(|line| line.contains(run.as_str())).collect();
    let has = |span: &str, message: &str| lines.iter().any(|line| line.contains(span) && line.contains(message));
    assert!(
        has("request{", "message accepted; its run is queued"),
        "the API names the run it queued:\n{text}"
    );
    assert!(
        has("request{", "approval decided"),
        "the API names the run an approval resumes:\n{text}"
    );
    let in_run = format!("run{{run_id={run}");
    assert!(has(&in_run, "executing run"), "the worker's run span:\n{text}");
    assert!(
        has(&in_run, "model_call{step=1"),
        "each model call in its step:\n{text}"
    );
    assert!(
        lines.iter().any(|line| line.contains(&in_run)
            && line.contains("tool{call_id=")
            && line.contains("tool=notes.add")
            && line.contains("call settled")),
        "the dispatch of the approved call:\n{text}"
    );
    for secret in ["plumber", stack.token.as_str()] {
        assert!(!text.contains(secret), "the logs hold `{secret}`:\n{text}");
    }
}
