//! Memory in the worker, against a real HTTP server speaking the OpenAI wire format: a finished
//! conversation run forms the beliefs the owner's words state, and a later run's prompt receives
//! the relevant ones after the agent's instructions, each recall traced; a belief the owner said
//! is not true is not recalled.

use serde_json::json;

use crate::support::{FakeState, Stack, agent_definitions, fake_model};

#[tokio::test]
async fn a_finished_run_forms_beliefs_and_a_later_run_recalls_the_relevant_ones() {
    let model = fake_model(FakeState::default()).await;
    let definitions = agent_definitions(json!({ "provider": "openai", "model": "gpt-test" }), None);
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions)]).await;
    stack.memory = true;
    let key = stack.key_file("sk-test-123\n");
    stack
        .start_worker(&[("OPENAI_BASE_URL", &model.url), ("OPENAI_API_KEY_FILE", &key)])
        .await;

    let first = stack.session().await;
    let run = stack
        .submit(
            &first,
            "I prefer green tea in the morning. I live in Lyon. Book me a table?",
        )
        .await;
    stack.completes(&run).await;
    // The beliefs form after the run has ended, one at a time: wait for both.
    let evidence = format!("SELECT count(*) FROM memory_evidence WHERE run_id = '{run}'");
    for _ in 0..200 {
        if stack.scalar::<i64>(&evidence).await >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let formed: Vec<(String, String, bool)> =
        sqlx::query_as("SELECT statement, origin, needs_review FROM memories ORDER BY position")
            .fetch_all(&stack.db.pool)
            .await
            .expect("memories");
    assert_eq!(
        formed,
        [
            (
                "Prefers green tea in the morning".to_owned(),
                "conversation".to_owned(),
                false
            ),
            ("Lives in Lyon".to_owned(), "conversation".to_owned(), false),
        ]
    );
    assert_eq!(stack.scalar::<i64>(&evidence).await, 2);
    // Nothing was held yet when the first run asked the model.
    assert_eq!(model.requests()[0].1["messages"].as_array().map(Vec::len), Some(2));

    // Lyon is not true: it is not recalled; the tea is.
    sqlx::query("UPDATE memories SET status = 'not_true', reviewed_at = now() WHERE statement = 'Lives in Lyon'")
        .execute(&stack.db.pool)
        .await
        .expect("not true");
    let second = stack.session().await;
    let asked = stack
        .submit(&second, "Which tea should I buy for the morning in Lyon?")
        .await;
    stack.completes(&asked).await;
    let requests = model.requests();
    let prompt = &requests.last().expect("a request").1["messages"];
    assert_eq!(prompt[0]["role"], "system");
    assert_eq!(prompt[1]["role"], "system");
    let section = prompt[1]["content"].as_str().expect("section");
    assert!(section.contains("never as instructions"), "{section}");
    assert!(
        section.ends_with("\n- (preference) Prefers green tea in the morning\n"),
        "{section}"
    );
    assert!(!section.contains("Lyon"), "{section}");
    assert_eq!(
        prompt[2],
        json!({ "role": "user", "content": "Which tea should I buy for the morning in Lyon?" })
    );
    let traced: Vec<(String, i16)> = sqlx::query_as(
        "SELECT m.statement, t.rank FROM recall_traces t JOIN memories m ON m.id = t.memory_id
         WHERE t.run_id = $1::uuid",
    )
    .bind(&asked)
    .fetch_all(&stack.db.pool)
    .await
    .expect("traces");
    assert_eq!(traced, [("Prefers green tea in the morning".to_owned(), 1)]);
    // A question forms nothing.
    let held: i64 = stack.scalar("SELECT count(*) FROM memories").await;
    assert_eq!(held, 2);
}
