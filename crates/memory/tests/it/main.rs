//! Memory against a real database, each part as the login that does it in production: the worker
//! and the async worker form beliefs (from a conversation's run, from mail), the api lists,
//! reviews, rejects and deletes them, and the worker recalls them and traces each recall.

use domain::ids::PrincipalId;
use domain::memory::{MemoryKind, MemoryOrigin, MemoryStatus, Statement};
use memory::{Proposal, Tally, offline};
use store::memory::{Evidence, Formed, MemoryQuery, NewMemory, Review};
use testkit::TestDatabase;
use uuid::Uuid;

fn owner() -> PrincipalId {
    PrincipalId::owner()
}

fn someone_else() -> PrincipalId {
    PrincipalId::from_stored("someone-else".to_owned())
}

/// A conversation of `principal` with one finished run, inserted as the test's superuser.
async fn conversation(db: &TestDatabase, principal: &str) -> (Uuid, Uuid) {
    sqlx::query(
        "INSERT INTO agent_versions (agent_id, version, configuration) VALUES ('default', 'v1', '{}')
         ON CONFLICT DO NOTHING",
    )
    .execute(&db.pool)
    .await
    .expect("agent version");
    let session: Uuid = sqlx::query_scalar(
        "INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version)
         VALUES (gen_random_uuid(), $1, (SELECT coalesce(max(index_position), 0) + 1 FROM sessions), 'default', 'v1')
         RETURNING id",
    )
    .bind(principal)
    .fetch_one(&db.pool)
    .await
    .expect("session");
    let run: Uuid = sqlx::query_scalar(
        "INSERT INTO runs (id, session_id, state, finished_at) VALUES (gen_random_uuid(), $1, 'completed', now())
         RETURNING id",
    )
    .bind(session)
    .fetch_one(&db.pool)
    .await
    .expect("run");
    (session, run)
}

fn proposal(kind: MemoryKind, statement: &str) -> Proposal {
    Proposal {
        kind,
        statement: Statement::new(statement).expect("statement"),
    }
}

#[tokio::test]
async fn a_deleted_statement_is_not_formed_again_whether_the_same_or_trivially_reworded() {
    let db = TestDatabase::new().await;
    let worker = db.store_as("worker").await;
    let api = db.store_as("api").await;
    let (session, run) = conversation(&db, "owner").await;
    let evidence = Evidence::Run { session, run };

    let formed = memory::form(
        &worker,
        &owner(),
        offline::propose("I prefer green tea in the morning. My sister is Ada."),
        &evidence,
    )
    .await
    .expect("form");
    assert_eq!(
        formed,
        Tally {
            created: 2,
            known: 0,
            forbidden: 0
        }
    );
    let listed = api
        .memory()
        .list(
            &owner(),
            &MemoryQuery {
                limit: 10,
                ..MemoryQuery::default()
            },
        )
        .await
        .expect("list");
    let tea = listed
        .iter()
        .find(|memory| memory.statement == "Prefers green tea in the morning")
        .expect("tea");
    assert_eq!(
        (tea.kind, tea.status, tea.needs_review, tea.origin),
        (
            MemoryKind::Preference,
            MemoryStatus::Active,
            false,
            MemoryOrigin::Conversation
        )
    );

    // Formed again in other words: the same belief, with more evidence.
    let again = memory::form(
        &worker,
        &owner(),
        vec![proposal(
            MemoryKind::Preference,
            "The owner prefers green tea, in the morning!",
        )],
        &evidence,
    )
    .await
    .expect("form");
    assert_eq!(
        again,
        Tally {
            created: 0,
            known: 1,
            forbidden: 0
        }
    );
    assert_eq!(
        api.memory().evidence(&owner(), tea.id).await.expect("evidence").len(),
        2
    );

    // Deleted: its evidence goes, its sources stay, and a tombstone of its form is kept.
    assert!(api.memory().delete(&owner(), tea.id).await.expect("delete"));
    assert!(
        !api.memory().delete(&owner(), tea.id).await.expect("again"),
        "gone already"
    );
    assert_eq!(api.memory().get(&owner(), tea.id).await.expect("get"), None);
    let kept: (i64, i64, String) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM memory_evidence), (SELECT count(*) FROM runs WHERE id = $1),
                (SELECT normalized FROM memory_tombstones)",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .expect("kept");
    assert_eq!(
        kept,
        (1, 1, "prefer green tea in morning".to_owned()),
        "the sister's evidence and the run stay; only the form is kept"
    );

    for statement in [
        "Prefers green tea in the morning",
        "prefers GREEN tea in the morning.",
        "The owner prefers green tea in the mornings",
        "Prefers green tea, morning",
    ] {
        let formed = worker
            .memory()
            .form(
                &owner(),
                &NewMemory {
                    kind: MemoryKind::Preference,
                    statement: Statement::new(statement).expect("statement"),
                    evidence: evidence.clone(),
                },
            )
            .await
            .expect("form");
        assert_eq!(formed, Formed::Forbidden, "{statement}");
    }
    // Another statement is formed, and another principal's deletions are not this one's.
    let other = memory::form(
        &worker,
        &owner(),
        vec![proposal(MemoryKind::Preference, "Prefers black coffee")],
        &evidence,
    )
    .await
    .expect("form");
    assert_eq!(other.created, 1);
    let (their_session, their_run) = conversation(&db, "someone-else").await;
    let theirs = someone_else();
    let formed = memory::form(
        &worker,
        &theirs,
        vec![proposal(MemoryKind::Preference, "Prefers green tea in the morning")],
        &Evidence::Run {
            session: their_session,
            run: their_run,
        },
    )
    .await
    .expect("form");
    assert_eq!(formed.created, 1);
    assert_eq!(
        api.memory()
            .list(
                &theirs,
                &MemoryQuery {
                    limit: 10,
                    ..MemoryQuery::default()
                }
            )
            .await
            .expect("list")
            .len(),
        1
    );
    assert_eq!(
        api.memory()
            .list(
                &owner(),
                &MemoryQuery {
                    limit: 10,
                    ..MemoryQuery::default()
                }
            )
            .await
            .expect("list")
            .len(),
        2
    );
}

#[tokio::test]
async fn beliefs_from_mail_arrive_flagged_and_are_recalled_only_once_reviewed() {
    let db = TestDatabase::new().await;
    let async_worker = db.store_as("async-worker").await;
    let worker = db.store_as("worker").await;
    let api = db.store_as("api").await;
    sqlx::query("INSERT INTO email_accounts (account_id, address) VALUES ('demo', 'owner@demo.example')")
        .execute(&db.pool)
        .await
        .expect("account");
    let thread: Uuid = sqlx::query_scalar(
        "INSERT INTO email_threads (account_id, provider_thread_id, latest_at) VALUES ('demo', 't1', now()) RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .expect("thread");
    let mail = Evidence::Mail {
        thread,
        provider_message_id: "m1".to_owned(),
    };
    let formed = memory::form(
        &async_worker,
        &owner(),
        offline::propose("I work at the Observatory."),
        &mail,
    )
    .await
    .expect("form");
    assert_eq!(formed.created, 1);
    let flagged = api
        .memory()
        .list(
            &owner(),
            &MemoryQuery {
                needs_review: Some(true),
                limit: 10,
                ..MemoryQuery::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(flagged.len(), 1);
    assert_eq!(
        (flagged[0].origin, flagged[0].status, flagged[0].needs_review),
        (MemoryOrigin::Email, MemoryStatus::Active, true)
    );
    let evidence = api.memory().evidence(&owner(), flagged[0].id).await.expect("evidence");
    assert_eq!(
        (evidence[0].email_thread, evidence[0].provider_message_id.as_deref()),
        (Some(thread), Some("m1"))
    );

    let (session, _) = conversation(&db, "owner").await;
    assert!(
        worker
            .memory()
            .recall(&owner(), session, "Where does the owner work?")
            .await
            .expect("recall")
            .is_empty(),
        "flagged: not recalled"
    );
    let reviewed = api
        .memory()
        .review(&owner(), flagged[0].id, Review::Reviewed)
        .await
        .expect("review")
        .expect("held");
    assert_eq!(
        (reviewed.status, reviewed.needs_review),
        (MemoryStatus::Reviewed, false)
    );
    assert!(reviewed.reviewed_at.is_some());
    let recalled = worker
        .memory()
        .recall(&owner(), session, "Where do I work these days?")
        .await
        .expect("recall");
    assert_eq!(
        recalled
            .iter()
            .map(|memory| memory.statement.as_str())
            .collect::<Vec<_>>(),
        ["Works at the Observatory"]
    );
    assert_eq!(
        api.memory()
            .review(&owner(), Uuid::now_v7(), Review::Reviewed)
            .await
            .expect("review"),
        None,
        "no such belief"
    );
}

#[tokio::test]
async fn not_true_is_never_recalled_not_relevant_here_only_not_in_that_conversation_and_recalls_are_traced() {
    let db = TestDatabase::new().await;
    let worker = db.store_as("worker").await;
    let api = db.store_as("api").await;
    let (first, run) = conversation(&db, "owner").await;
    let (second, second_run) = conversation(&db, "owner").await;
    let evidence = Evidence::Run { session: first, run };
    memory::form(
        &worker,
        &owner(),
        vec![
            proposal(MemoryKind::Preference, "Likes Italian food"),
            proposal(MemoryKind::Fact, "Lives in Lyon near the food market"),
            proposal(MemoryKind::Routine, "Every friday: cooks Italian food"),
        ],
        &evidence,
    )
    .await
    .expect("form");
    let all = api
        .memory()
        .list(
            &owner(),
            &MemoryQuery {
                limit: 10,
                ..MemoryQuery::default()
            },
        )
        .await
        .expect("list");
    let id = |statement: &str| {
        all.iter()
            .find(|memory| memory.statement == statement)
            .expect(statement)
            .id
    };
    let statements = |recalled: &[store::memory::Recalled]| {
        let mut said: Vec<String> = recalled.iter().map(|memory| memory.statement.clone()).collect();
        said.sort();
        said
    };

    let recalled = worker
        .memory()
        .recall(&owner(), first, "Suggest some food for tonight")
        .await
        .expect("recall");
    assert_eq!(
        statements(&recalled),
        [
            "Every friday: cooks Italian food",
            "Likes Italian food",
            "Lives in Lyon near the food market"
        ]
    );

    // Not true: never recalled anywhere, and not formed again as a new belief.
    api.memory()
        .review(&owner(), id("Lives in Lyon near the food market"), Review::NotTrue)
        .await
        .expect("review")
        .expect("held");
    // Not relevant here: not recalled in the first conversation, still in the second.
    assert!(
        api.memory()
            .exclude(&owner(), id("Every friday: cooks Italian food"), first)
            .await
            .expect("exclude")
    );
    assert!(
        api.memory()
            .exclude(&owner(), id("Every friday: cooks Italian food"), first)
            .await
            .expect("again"),
        "repeating it is done"
    );
    assert!(
        !api.memory()
            .exclude(&owner(), Uuid::now_v7(), first)
            .await
            .expect("none"),
        "no such belief"
    );
    let (elsewhere, _) = conversation(&db, "someone-else").await;
    assert!(
        !api.memory()
            .exclude(&owner(), id("Likes Italian food"), elsewhere)
            .await
            .expect("theirs"),
        "not the owner's conversation"
    );

    let here = worker
        .memory()
        .recall(&owner(), first, "Suggest some food for tonight")
        .await
        .expect("recall");
    assert_eq!(statements(&here), ["Likes Italian food"]);
    let there = worker
        .memory()
        .recall(&owner(), second, "Any food ideas?")
        .await
        .expect("recall");
    assert_eq!(
        statements(&there),
        ["Every friday: cooks Italian food", "Likes Italian food"]
    );
    let again = memory::form(
        &worker,
        &owner(),
        vec![proposal(MemoryKind::Fact, "Lives in Lyon near the food market")],
        &evidence,
    )
    .await
    .expect("form");
    assert_eq!(
        again,
        Tally {
            created: 0,
            known: 1,
            forbidden: 0
        },
        "the rejected belief stands for it"
    );
    assert_eq!(
        api.memory()
            .get(&owner(), id("Lives in Lyon near the food market"))
            .await
            .expect("get")
            .expect("held")
            .status,
        MemoryStatus::NotTrue
    );

    // Traced: the run's recalls in rank order, and each belief's runs.
    worker.memory().trace_recall(second_run, &there).await.expect("trace");
    worker
        .memory()
        .trace_recall(second_run, &there)
        .await
        .expect("tracing twice is harmless");
    let traced = api
        .memory()
        .recalled_by(&owner(), second_run)
        .await
        .expect("recalled by");
    assert_eq!(
        traced.iter().map(|memory| memory.id).collect::<Vec<_>>(),
        there.iter().map(|memory| memory.id).collect::<Vec<_>>()
    );
    let recalls = api
        .memory()
        .recalls(&owner(), id("Likes Italian food"))
        .await
        .expect("recalls");
    assert_eq!(recalls.len(), 1);
    assert_eq!((recalls[0].run, recalls[0].session), (second_run, second));
    assert!(
        api.memory()
            .recalled_by(&someone_else(), second_run)
            .await
            .expect("theirs")
            .is_empty()
    );

    // Nothing in the message to search for: nothing recalled; words the search parser reads
    // no lexeme in drop out without spoiling the query.
    assert!(
        worker
            .memory()
            .recall(&owner(), second, "ok?")
            .await
            .expect("recall")
            .is_empty()
    );
    assert!(
        worker
            .memory()
            .recall(&owner(), second, "½½½ ²²²")
            .await
            .expect("recall")
            .is_empty()
    );
    let odd = worker
        .memory()
        .recall(&owner(), second, "x²³y ½½½ 'food' \\ & | ! italian:*")
        .await
        .expect("recall");
    assert_eq!(
        statements(&odd),
        ["Every friday: cooks Italian food", "Likes Italian food"]
    );
    let section = memory::recalled_section(&there).expect("section");
    assert!(section.contains("- (preference) Likes Italian food\n"), "{section}");
    assert_eq!(memory::recalled_section(&[]), None);
}

#[tokio::test]
async fn the_listing_filters_by_status_kind_and_flag_and_pages_newest_first() {
    let db = TestDatabase::new().await;
    let worker = db.store_as("worker").await;
    let api = db.store_as("api").await;
    let (session, run) = conversation(&db, "owner").await;
    let proposals: Vec<Proposal> = (0..7)
        .map(|n| {
            proposal(
                if n % 2 == 0 {
                    MemoryKind::Fact
                } else {
                    MemoryKind::Preference
                },
                &format!("Statement number {n} about item{n}"),
            )
        })
        .collect();
    memory::form(&worker, &owner(), proposals, &Evidence::Run { session, run })
        .await
        .expect("form");
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = api
            .memory()
            .list(
                &owner(),
                &MemoryQuery {
                    before,
                    limit: 3,
                    ..MemoryQuery::default()
                },
            )
            .await
            .expect("page");
        if page.is_empty() {
            break;
        }
        before = page.last().map(|memory| memory.position);
        seen.extend(page.into_iter().map(|memory| memory.statement));
    }
    let expected: Vec<String> = (0..7)
        .rev()
        .map(|n| format!("Statement number {n} about item{n}"))
        .collect();
    assert_eq!(seen, expected, "newest first, each once");

    let facts = api
        .memory()
        .list(
            &owner(),
            &MemoryQuery {
                kind: Some(MemoryKind::Fact),
                limit: 10,
                ..MemoryQuery::default()
            },
        )
        .await
        .expect("facts");
    assert_eq!(facts.len(), 4);
    api.memory()
        .review(&owner(), facts[0].id, Review::Reviewed)
        .await
        .expect("review");
    let reviewed = api
        .memory()
        .list(
            &owner(),
            &MemoryQuery {
                status: Some(MemoryStatus::Reviewed),
                limit: 10,
                ..MemoryQuery::default()
            },
        )
        .await
        .expect("reviewed");
    assert_eq!(
        reviewed.iter().map(|memory| memory.id).collect::<Vec<_>>(),
        [facts[0].id]
    );
    let unflagged = api
        .memory()
        .list(
            &owner(),
            &MemoryQuery {
                needs_review: Some(false),
                kind: Some(MemoryKind::Preference),
                limit: 10,
                ..MemoryQuery::default()
            },
        )
        .await
        .expect("unflagged");
    assert_eq!(unflagged.len(), 3);
}

#[tokio::test]
async fn the_people_a_conversation_names_become_records_with_their_relationship_and_evidence() {
    let db = TestDatabase::new().await;
    // The worker's own login keeps them.
    let worker = db.store_as("worker").await;
    let (session, run) = conversation(&db, "owner").await;

    let proposals = offline::propose("My sister is Grace Hopper. I live in Lisbon. My boss is Ada.");
    let mentioned = memory::people::from_conversation(&proposals);
    assert_eq!(
        mentioned
            .iter()
            .map(|m| (m.name.as_str(), m.relationship.as_str()))
            .collect::<Vec<_>>(),
        [("Grace Hopper", "sister"), ("Ada", "boss")],
        "a relationship belief names someone; a fact about the owner names no one"
    );
    let made = worker
        .people()
        .mentioned(&owner(), session, run, &mentioned)
        .await
        .expect("mentioned");
    assert_eq!(made, 2);

    // Grace is named again in another run, spelled differently and as a friend: she is the same
    // record, her relationship stays the first one said, and the new statement is another fact.
    let (session, later) = conversation(&db, "owner").await;
    let again =
        memory::people::from_conversation(&[proposal(MemoryKind::Relationship, "grace hopper is the owner's friend")]);
    let made = worker
        .people()
        .mentioned(&owner(), session, later, &again)
        .await
        .expect("again");
    assert_eq!(made, 0);

    let people: Vec<(String, Option<String>, bool)> =
        sqlx::query_as("SELECT name, relationship, needs_review FROM people ORDER BY position")
            .fetch_all(&db.pool)
            .await
            .expect("people");
    assert_eq!(
        people,
        [
            ("Grace Hopper".to_owned(), Some("sister".to_owned()), false),
            ("Ada".to_owned(), Some("boss".to_owned()), false),
        ]
    );
    let facts: Vec<(String, String, Option<Uuid>)> = sqlx::query_as(
        "SELECT f.statement, f.source, f.run_id FROM person_facts f JOIN people p ON p.id = f.person_id
         WHERE p.name = 'Grace Hopper' ORDER BY f.noted_at, f.id",
    )
    .fetch_all(&db.pool)
    .await
    .expect("facts");
    assert_eq!(
        facts,
        [
            (
                "Grace Hopper is the owner's sister".to_owned(),
                "conversation".to_owned(),
                Some(run)
            ),
            (
                "grace hopper is the owner's friend".to_owned(),
                "conversation".to_owned(),
                Some(later)
            ),
        ]
    );
    // Another principal's conversation names no one of the owner's.
    let (session, theirs) = conversation(&db, "someone-else").await;
    let made = worker
        .people()
        .mentioned(&someone_else(), session, theirs, &mentioned)
        .await
        .expect("theirs");
    assert_eq!(made, 2);
}
