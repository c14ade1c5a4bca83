//! Memory's routes (mounted with `AGENT_MEMORY_API_ENABLED`, turned on in code): the listing with its filters and cursors, one belief with
//! its evidence and recalls, the review actions, deletion (the statement not formed again) and a
//! run's recalled beliefs; each belief the owner's only.

use domain::flags::{FeatureFlags, Flag};
use domain::ids::PrincipalId;
use domain::memory::{MemoryKind, Statement};
use reqwest::Method;
use serde_json::{Value, json};
use store::memory::{Evidence, Formed, NewMemory};
use uuid::Uuid;

use crate::support::{Env, TestApp, expect_problem, json};

async fn app() -> TestApp {
    TestApp::spawn_configured(Env::default(), |config| {
        config.flags = FeatureFlags::with(&[Flag::MemoryApi]).expect("flags");
    })
    .await
}

/// A finished run of a new conversation of the owner's.
async fn finished_run(app: &TestApp) -> (Uuid, Uuid) {
    let session: Uuid = app.new_session_id().await.parse().expect("a session id");
    let run: Uuid = sqlx::query_scalar(
        "INSERT INTO runs (id, session_id, state, finished_at) VALUES (gen_random_uuid(), $1, 'completed', now())
         RETURNING id",
    )
    .bind(session)
    .fetch_one(&app.db.pool)
    .await
    .expect("run");
    (session, run)
}

/// Forms `statements` (as the worker does) from `run` of `session`.
async fn form(app: &TestApp, session: Uuid, run: Uuid, statements: &[(MemoryKind, &str)]) -> Vec<Uuid> {
    let worker = app.db.store_as("worker").await;
    let mut ids = Vec::new();
    for (kind, statement) in statements {
        let new = NewMemory {
            kind: *kind,
            statement: Statement::new(statement).expect("statement"),
            evidence: Evidence::Run { session, run },
        };
        match worker.memory().form(&PrincipalId::owner(), &new).await.expect("form") {
            Formed::Created(id) => ids.push(id),
            other => panic!("{statement}: {other:?}"),
        }
    }
    ids
}

async fn review(app: &TestApp, id: Uuid, body: Value) -> (u16, Value) {
    json(
        app.request(Method::POST, &format!("/v1/memories/{id}/review"))
            .json(&body)
            .send()
            .await
            .expect("review"),
    )
    .await
}

#[tokio::test]
async fn the_listing_filters_and_pages_and_one_belief_shows_its_evidence_and_recalls() {
    let app = app().await;
    let (session, run) = finished_run(&app).await;
    let ids = form(
        &app,
        session,
        run,
        &[
            (MemoryKind::Preference, "Prefers green tea"),
            (MemoryKind::Fact, "Works at the Observatory"),
            (MemoryKind::Relationship, "Ada is the owner's sister"),
        ],
    )
    .await;

    let (status, first) = app.get_json("/v1/memories?limit=2").await;
    assert_eq!(status, 200, "{first}");
    let statements = |page: &Value| -> Vec<String> {
        page["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .map(|memory| memory["statement"].as_str().expect("statement").to_owned())
            .collect()
    };
    assert_eq!(
        statements(&first),
        ["Ada is the owner's sister", "Works at the Observatory"]
    );
    let cursor = first["next_cursor"].as_str().expect("more follow");
    let (_, second) = app.get_json(&format!("/v1/memories?limit=2&cursor={cursor}")).await;
    assert_eq!(statements(&second), ["Prefers green tea"]);
    assert_eq!(second["next_cursor"], Value::Null);
    let belief = &second["memories"][0];
    assert_eq!(belief["kind"], "preference");
    assert_eq!(belief["status"], "active");
    assert_eq!(belief["needs_review"], false);
    assert_eq!(belief["origin"], "conversation");
    assert_eq!(belief["reviewed_at"], Value::Null);

    let (_, facts) = app.get_json("/v1/memories?kind=fact").await;
    assert_eq!(statements(&facts), ["Works at the Observatory"]);
    let (_, flagged) = app.get_json("/v1/memories?needs_review=true").await;
    assert_eq!(statements(&flagged), Vec::<String>::new());
    expect_problem(
        app.send(Method::GET, "/v1/memories?cursor=forged").await,
        400,
        "invalid_cursor",
    )
    .await;
    expect_problem(
        app.send(Method::GET, "/v1/memories?limit=0").await,
        400,
        "invalid_request",
    )
    .await;
    expect_problem(
        app.send(Method::GET, "/v1/memories?status=forgotten").await,
        400,
        "invalid_request",
    )
    .await;

    // Recalled by a later run: the belief shows it, and the run shows the belief.
    let (later_session, later) = finished_run(&app).await;
    let worker = app.db.store_as("worker").await;
    let recalled = worker
        .memory()
        .recall(&PrincipalId::owner(), later_session, "What tea do I like?")
        .await
        .expect("recall");
    worker.memory().trace_recall(later, &recalled).await.expect("trace");
    let (status, detail) = app.get_json(&format!("/v1/memories/{}", ids[0])).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["memory"]["statement"], "Prefers green tea");
    assert_eq!(detail["evidence"][0]["session_id"], session.to_string());
    assert_eq!(detail["evidence"][0]["run_id"], run.to_string());
    assert_eq!(detail["recalls"][0]["run_id"], later.to_string());
    assert_eq!(detail["recalls"][0]["rank"], 1);
    let (status, by_run) = app.get_json(&format!("/v1/runs/{later}/memories")).await;
    assert_eq!(status, 200, "{by_run}");
    assert_eq!(statements(&by_run), ["Prefers green tea"]);
    let (_, none) = app.get_json(&format!("/v1/runs/{run}/memories")).await;
    assert_eq!(statements(&none), Vec::<String>::new());
    expect_problem(
        app.send(Method::GET, &format!("/v1/runs/{}/memories", Uuid::new_v4()))
            .await,
        404,
        "run_not_found",
    )
    .await;
    expect_problem(
        app.send(Method::GET, &format!("/v1/memories/{}", Uuid::new_v4())).await,
        404,
        "memory_not_found",
    )
    .await;
    expect_problem(
        app.send(Method::GET, "/v1/memories/not-an-id").await,
        404,
        "memory_not_found",
    )
    .await;
}

#[tokio::test]
async fn review_actions_and_deletion_govern_recall_and_forming() {
    let app = app().await;
    let (session, run) = finished_run(&app).await;
    let ids = form(
        &app,
        session,
        run,
        &[
            (MemoryKind::Preference, "Likes Italian food"),
            (MemoryKind::Fact, "Lives in Lyon near the food market"),
        ],
    )
    .await;
    let worker = app.db.store_as("worker").await;
    let recall = |session: Uuid| {
        let worker = worker.clone();
        async move {
            let mut said: Vec<String> = worker
                .memory()
                .recall(&PrincipalId::owner(), session, "food ideas")
                .await
                .expect("recall")
                .into_iter()
                .map(|memory| memory.statement)
                .collect();
            said.sort();
            said
        }
    };

    let (status, reviewed) = review(&app, ids[0], json!({"action": "mark_reviewed"})).await;
    assert_eq!(status, 200, "{reviewed}");
    assert_eq!(reviewed["status"], "reviewed");
    assert!(reviewed["reviewed_at"].is_string());
    let (status, rejected) = review(&app, ids[1], json!({"action": "not_true"})).await;
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(rejected["status"], "not_true");
    assert_eq!(recall(session).await, ["Likes Italian food"]);

    // Not relevant here: this conversation only, and only the owner's.
    let (status, kept) = review(
        &app,
        ids[0],
        json!({"action": "not_relevant_here", "session_id": session}),
    )
    .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["status"], "reviewed", "the belief itself is unchanged");
    assert_eq!(recall(session).await, Vec::<String>::new());
    let (other, _) = finished_run(&app).await;
    assert_eq!(recall(other).await, ["Likes Italian food"]);
    let (status, refused) = review(
        &app,
        ids[0],
        json!({"action": "not_relevant_here", "session_id": Uuid::new_v4()}),
    )
    .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (404, Some("session_not_found")),
        "{refused}"
    );
    let (status, refused) = review(&app, ids[0], json!({"action": "forget"})).await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (422, Some("validation_failed")),
        "{refused}"
    );
    // An unknown member is refused with every action, one with no members of its own too.
    for action in ["mark_reviewed", "not_true"] {
        let (status, refused) = review(&app, ids[0], json!({"action": action, "why": "because"})).await;
        assert_eq!(
            (status, refused["code"].as_str()),
            (422, Some("validation_failed")),
            "{action}: {refused}"
        );
    }
    let (status, refused) = review(&app, Uuid::new_v4(), json!({"action": "not_true"})).await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (404, Some("memory_not_found")),
        "{refused}"
    );

    // Delete memory: gone, its source stays, and it does not form again.
    let deleted = app.send(Method::DELETE, &format!("/v1/memories/{}", ids[0])).await;
    assert_eq!(deleted.status(), 204);
    expect_problem(
        app.send(Method::DELETE, &format!("/v1/memories/{}", ids[0])).await,
        404,
        "memory_not_found",
    )
    .await;
    assert_eq!(app.count("memory_tombstones").await, 1);
    assert_eq!(app.count("runs").await, 2, "its sources stay");
    let again = NewMemory {
        kind: MemoryKind::Preference,
        statement: Statement::new("The owner likes Italian food!").expect("statement"),
        evidence: Evidence::Run { session, run },
    };
    assert_eq!(
        worker.memory().form(&PrincipalId::owner(), &again).await.expect("form"),
        Formed::Forbidden
    );
    let (_, listed) = app.get_json("/v1/memories").await;
    assert_eq!(listed["memories"].as_array().map(Vec::len), Some(1));
}
