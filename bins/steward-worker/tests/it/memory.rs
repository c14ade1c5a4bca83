//! Memory in the worker, against a real HTTP server speaking the OpenAI wire format: a finished
//! conversation run has the owner's memory model form the beliefs the owner's words state (one
//! bounded call, charged to the run), and a later run's prompt receives the relevant ones after
//! the agent's instructions, each recall traced; a belief the owner said is not true is not
//! recalled. A run that spent its cost limit forms beliefs with the rule-based former instead.

use serde_json::{Value, json};
use testkit::model::{self, FakeModel, Reply};

use crate::support::{FakeState, Stack, agent_definitions};

/// Whether `body` is the memory model's forming request (its instructions come first).
fn forming(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|text| text.starts_with("You keep the owner's memory."))
}

/// The model: as a memory model, it proposes the tea and Lyon for the words that state them and
/// nothing for others; as the chat model, it answers as [`FakeState`]'s default.
async fn memory_model() -> FakeModel {
    FakeModel::start(|number, body| {
        if !forming(body) {
            return FakeState::default().reply(number, body);
        }
        let words = body["messages"][1]["content"].as_str().unwrap_or_default();
        let beliefs = if words.contains("I live in Lyon") {
            json!([{ "kind": "preference", "statement": "Prefers green tea in the morning" },
                   { "kind": "fact", "statement": "Lives in Lyon, France" }])
        } else {
            json!([])
        };
        let answer = json!({ "beliefs": beliefs }).to_string();
        Reply::frames(vec![
            model::content(&answer),
            model::finish("stop"),
            model::usage(30, 12),
        ])
    })
    .await
}

/// A stack whose agent uses `model` (priced as `rates` says) under the API's `limits`.
async fn memory_stack(model: &FakeModel, rates: Value, limits: &[(&str, &str)]) -> Stack {
    let mut agent = json!({ "provider": "openai", "model": "gpt-test" });
    agent
        .as_object_mut()
        .expect("an object")
        .extend(rates.as_object().cloned().unwrap_or_default());
    let definitions = agent_definitions(agent, None);
    let mut variables = vec![("AGENT_DEFINITIONS", definitions.as_str())];
    variables.extend_from_slice(limits);
    let mut stack = Stack::api(&variables).await;
    stack.memory = true;
    let key = stack.key_file("sk-test-123\n");
    stack
        .start_worker(&[("OPENAI_BASE_URL", &model.url), ("OPENAI_API_KEY_FILE", &key)])
        .await;
    stack
}

/// Waits until `count` beliefs hold evidence of `run` (they form after it ended).
async fn formed_from(stack: &Stack, run: &str, count: i64) {
    let evidence = format!("SELECT count(*) FROM memory_evidence WHERE run_id = '{run}'");
    for _ in 0..200 {
        if stack.scalar::<i64>(&evidence).await >= count {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(stack.scalar::<i64>(&evidence).await, count);
}

#[tokio::test]
async fn a_finished_run_forms_beliefs_and_a_later_run_recalls_the_relevant_ones() {
    let model = memory_model().await;
    let stack = memory_stack(&model, json!({}), &[]).await;

    let first = stack.session().await;
    let run = stack
        .submit(
            &first,
            "I prefer green tea in the morning. I live in Lyon. Book me a table?",
        )
        .await;
    stack.completes(&run).await;
    // The beliefs form after the run has ended, one at a time: wait for both.
    formed_from(&stack, &run, 2).await;
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
            // The memory model's words (the rule-based former would say `Lives in Lyon`).
            ("Lives in Lyon, France".to_owned(), "conversation".to_owned(), false),
        ]
    );
    // Nothing was held yet when the first run asked the model.
    assert_eq!(model.requests()[0].1["messages"].as_array().map(Vec::len), Some(2));
    // The memory model (the offer's default: the agent's model) read the owner's words alone,
    // offered no tools, bounded its answer, and its usage was charged to the run.
    let asked = &model.requests()[1].1;
    assert!(forming(asked));
    assert_eq!(
        (
            asked["model"].as_str(),
            asked.get("tools"),
            asked["max_tokens"].as_u64()
        ),
        (Some("gpt-test"), None, Some(800))
    );
    assert_eq!(
        asked["messages"][1],
        json!({ "role": "user", "content": "I prefer green tea in the morning. I live in Lyon. Book me a table?" })
    );
    let usage: (i64, i64) = sqlx::query_as("SELECT input_tokens, output_tokens FROM runs WHERE id = $1::uuid")
        .bind(&run)
        .fetch_one(&stack.db.pool)
        .await
        .expect("usage");
    assert_eq!(usage, (100 + 30, 20 + 12), "the chat's step and the forming call");

    // Lyon is not true: it is not recalled; the tea is.
    sqlx::query(
        "UPDATE memories SET status = 'not_true', reviewed_at = now() WHERE statement = 'Lives in Lyon, France'",
    )
    .execute(&stack.db.pool)
    .await
    .expect("not true");
    let second = stack.session().await;
    let asked = stack
        .submit(&second, "Which tea should I buy for the morning in Lyon?")
        .await;
    stack.completes(&asked).await;
    let requests = model.requests();
    // The chat's request (the memory model may be asked after it, once the run has ended).
    let prompt = &requests
        .iter()
        .rev()
        .find(|(_, body)| !forming(body))
        .expect("a request")
        .1["messages"];
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
    // A question forms nothing: wait for the memory model's answer to be read.
    while model.requests().iter().filter(|(_, body)| forming(body)).count() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let charged = format!("SELECT input_tokens FROM runs WHERE id = '{asked}'");
    for _ in 0..200 {
        if stack.scalar::<i64>(&charged).await == 130 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let held: i64 = stack.scalar("SELECT count(*) FROM memories").await;
    assert_eq!(held, 2);
}

#[tokio::test]
async fn a_run_that_spent_its_cost_limit_forms_beliefs_and_people_without_the_memory_model() {
    let model = memory_model().await;
    // Any step costs more than the run may spend.
    let stack = memory_stack(
        &model,
        json!({ "input_cost_per_mtok": "100000" }),
        &[("RUN_MAX_COST", "0.01")],
    )
    .await;
    let session = stack.session().await;
    let run = stack
        .submit(
            &session,
            "I live in Porto. I like long walks. My sister is Grace Hopper",
        )
        .await;
    let ended = stack.wait_for(&run, &["completed", "failed"]).await;
    assert_eq!(ended["reason"], "limit.max_cost", "{ended}");
    formed_from(&stack, &run, 3).await;
    let formed: Vec<String> = sqlx::query_scalar("SELECT statement FROM memories ORDER BY position")
        .fetch_all(&stack.db.pool)
        .await
        .expect("memories");
    assert_eq!(
        formed,
        [
            "Lives in Porto",
            "Likes long walks",
            "Grace Hopper is the owner's sister"
        ],
        "the rule-based former's"
    );
    // The sister she named is a person (kept after the beliefs, in the same forming).
    let person = "SELECT count(*) FROM people WHERE name = 'Grace Hopper' AND relationship = 'sister'";
    for _ in 0..200 {
        if stack.scalar::<i64>(person).await == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(stack.scalar::<i64>(person).await, 1);
    let evidence = format!("SELECT count(*) FROM person_facts WHERE run_id = '{run}' AND source = 'conversation'");
    assert_eq!(stack.scalar::<i64>(&evidence).await, 1);
    assert!(
        !model.requests().iter().any(|(_, body)| forming(body)),
        "the memory model was not asked"
    );
}
