//! Import history in the async worker: an import reads the synced messages of its date range
//! again into People (a forgotten person is never made again) and forms beliefs from the
//! owner's sent mail; it ends when its range is read, at its record limit, or when its spending
//! cap has no room for the memory model's next request; a cancelled import is not read; one
//! import at a time; its session is outside the session index.

use std::sync::Arc;
use std::time::Duration;

use domain::agent::{AgentDefinition, AgentRegistry};
use domain::flags::FeatureFlags;
use domain::ids::PrincipalId;
use domain::run::Cost;
use email::allowance::Allowances;
use email::classify::Classifier;
use email::refresh::Refresher;
use jiff::ToSpan;
use serde_json::json;
use store::people_imports::{ImportRow, ImportState, NewImport, Started};
use testkit::gmail::FakeGmail;
use testkit::model::{FakeModel, Reply};

use crate::refresh::{account, gmail};

const LEASE: Duration = Duration::from_secs(60);

/// Days ago (UTC), as a date and as the seconds of that day's noon.
fn day(days_ago: i64) -> (jiff::civil::Date, i64) {
    let date = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .checked_sub(days_ago.days())
        .expect("date");
    let noon = date
        .at(12, 0, 0, 0)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .expect("zoned")
        .timestamp()
        .as_second();
    (date, noon)
}

/// Ada wrote five days ago, Bob three (when the owner answered Carol), Dan one.
async fn provider() -> FakeGmail {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    for (from, to, days, text) in [
        ("ada@example.com", "owner@example.org", 5, "Hello from Ada."),
        (
            "bob@example.com",
            "owner@example.org",
            3,
            "Hello from Bob.\nMobile: +44 20 7946 0958",
        ),
        (
            "owner@example.org",
            "carol@example.com",
            3,
            "I prefer calls in the morning.",
        ),
        ("dan@example.com", "owner@example.org", 1, "Hello from Dan."),
    ] {
        let raw = mail_builder::MessageBuilder::new()
            .from(from)
            .to(to)
            .subject(format!("Note from {from}"))
            .date(day(days).1)
            .text_body(text)
            .write_to_vec()
            .expect("built");
        let labels: &[&str] = if from.starts_with("owner") {
            &["SENT"]
        } else {
            &["INBOX"]
        };
        fake.deliver_raw("owner", &raw, labels, None);
    }
    fake
}

fn classifier(model: Option<&FakeModel>) -> Classifier {
    let Some(model) = model else { return Classifier::Offline };
    Classifier::Model(crate::model_classifier(&model.url, "assessor-1", Allowances::default()))
}

async fn synced(db: &testkit::TestDatabase, fake: &FakeGmail, model: Option<&FakeModel>) -> Refresher {
    let store = db.store_as("async-worker").await;
    crate::refresh::ensure_accounts(&store, &["personal"]).await;
    let refresher = Refresher {
        store,
        gmail: gmail(fake),
        backfill: jiff::SignedDuration::from_hours(24 * 10),
        classifier: Arc::new(classifier(model)),
        census: None,
        junk: email::junk::JunkSettings::off(),
    };
    refresher.update(&account(fake, "owner")).await.expect("update");
    refresher
}

async fn start(api: &store::Store, since: i64, until: i64, record_limit: u32, cap: &str) -> Started {
    let flags = FeatureFlags::with(&[]).expect("flags");
    let agents = AgentRegistry::compose(vec![AgentDefinition::builtin_default()], &flags, None).expect("agents");
    api.imports()
        .start(&NewImport {
            principal: &PrincipalId::owner(),
            agent: agents.get("default").expect("default"),
            since: day(since).0,
            until: day(until).0,
            record_limit,
            spending_cap: Cost::parse(cap).expect("cap"),
        })
        .await
        .expect("start")
}

fn started(started: Started) -> ImportRow {
    match started {
        Started::Started(row) => *row,
        Started::InProgress(id) => panic!("another import is in progress: {id}"),
    }
}

/// Turns until the import ends (or `turns` pass); the import as it ends.
async fn run(refresher: &Refresher, api: &store::Store, id: uuid::Uuid) -> ImportRow {
    for _ in 0..20 {
        refresher.import_turn("async-1", LEASE).await.expect("turn");
        let row = api
            .imports()
            .get(&PrincipalId::owner(), id)
            .await
            .expect("get")
            .expect("row");
        if row.finished_at.is_some() {
            return row;
        }
    }
    panic!("the import never ended");
}

async fn names(db: &testkit::TestDatabase) -> Vec<String> {
    sqlx::query_scalar("SELECT name FROM people ORDER BY name")
        .fetch_all(&db.pool)
        .await
        .expect("people")
}

#[tokio::test]
async fn an_import_reads_its_range_into_people_and_beliefs_and_ends_when_it_is_read() {
    let fake = provider().await;
    let db = testkit::TestDatabase::new().await;
    let refresher = synced(&db, &fake, None).await;
    let api = db.store_as("api").await;

    // Four days ago to two days ago: Bob's message and the owner's answer to Carol.
    let import = started(start(&api, 4, 2, 100, "0").await);
    assert_eq!(import.state, ImportState::Queued);
    let kind: String = sqlx::query_scalar("SELECT kind FROM sessions WHERE id = $1")
        .bind(import.session)
        .fetch_one(&db.pool)
        .await
        .expect("session");
    assert_eq!(kind, "people_import");
    let index = api.session_page(&PrincipalId::owner(), None, 50).await.expect("index");
    assert!(
        index.rows.is_empty(),
        "the import's session is outside the session index"
    );
    // One import at a time.
    assert_eq!(start(&api, 10, 0, 5, "0").await, Started::InProgress(import.id));

    let ended = run(&refresher, &api, import.id).await;
    assert_eq!(
        (ended.state, ended.stop_reason.as_deref(), ended.records_read),
        (ImportState::Completed, Some("range_read"), 2)
    );
    assert_eq!(
        (ended.people_created, ended.facts_noted, ended.beliefs_formed),
        (2, 0, 1)
    );
    assert_eq!(names(&db).await, ["Bob", "Carol"]);
    let phone: i64 = sqlx::query_scalar("SELECT count(*) FROM person_contacts WHERE kind = 'phone'")
        .fetch_one(&db.pool)
        .await
        .expect("phone");
    assert_eq!(phone, 1, "what Bob said of himself");
    let belief: (String, bool) = sqlx::query_as("SELECT statement, needs_review FROM memories")
        .fetch_one(&db.pool)
        .await
        .expect("belief");
    assert_eq!(belief, ("Prefers calls in the morning".to_owned(), true));

    // Bob is forgotten; a second import over everything stops at its record limit of three
    // messages and never makes him again.
    let bob: uuid::Uuid = sqlx::query_scalar("SELECT id FROM people WHERE name = 'Bob'")
        .fetch_one(&db.pool)
        .await
        .expect("bob");
    assert!(api.people().forget(&PrincipalId::owner(), bob).await.expect("forget"));
    let second = started(start(&api, 10, 0, 3, "0").await);
    let ended = run(&refresher, &api, second.id).await;
    assert_eq!(
        (ended.stop_reason.as_deref(), ended.records_read),
        (Some("record_limit"), 3)
    );
    assert_eq!(
        names(&db).await,
        ["Ada", "Carol"],
        "Ada is new; Bob stays forgotten; Dan is past the limit"
    );
}

#[tokio::test]
async fn an_import_whose_worker_stopped_is_taken_over_from_its_cursor_once_the_claim_expires() {
    let fake = provider().await;
    let db = testkit::TestDatabase::new().await;
    // Synced (projected) by a refresher; the import's workers below are the store alone.
    synced(&db, &fake, None).await;
    let clock = Arc::new(testkit::ShiftedClock::default());
    let worker = db.store_as("async-worker").await.with_clock(clock.clone());
    let api = db.store_as("api").await;
    let import = started(start(&api, 10, 0, 100, "0").await);
    let imports = worker.imports();
    let read = &memory::people::read;

    // The first worker claims it and reads two messages (Ada's and Bob's), then stops.
    let claimed = imports
        .claim("async-1", LEASE)
        .await
        .expect("claim")
        .expect("an import");
    assert_eq!((claimed.id, claimed.state), (import.id, ImportState::Running));
    let first = imports
        .read_batch(import.id, "async-1", LEASE, 2, read)
        .await
        .expect("read")
        .expect("held");
    assert_eq!((first.batch.gathered.messages, first.ended), (2, None));
    // While its claim holds, no other worker may take it.
    assert_eq!(imports.claim("async-2", LEASE).await.expect("claim"), None);

    // Past the claim, the second takes it over and goes on from the cursor.
    clock.advance(jiff::SignedDuration::from_secs(LEASE.as_secs() as i64 + 1));
    let taken = imports
        .claim("async-2", LEASE)
        .await
        .expect("claim")
        .expect("taken over");
    assert_eq!((taken.id, taken.records_read), (import.id, 2));
    assert!(
        imports
            .read_batch(import.id, "async-1", LEASE, 2, read)
            .await
            .expect("read")
            .is_none(),
        "the first worker no longer holds it"
    );
    let second = imports
        .read_batch(import.id, "async-2", LEASE, 2, read)
        .await
        .expect("read")
        .expect("held");
    assert_eq!(
        second.batch.gathered.messages, 2,
        "the owner's answer to Carol and Dan's message"
    );
    assert_eq!(second.batch.sent.len(), 1);
    let last = imports
        .read_batch(import.id, "async-2", LEASE, 2, read)
        .await
        .expect("read")
        .expect("held");
    assert_eq!((last.batch.gathered.messages, last.ended), (0, Some("range_read")));
    assert!(
        imports
            .finish(import.id, "async-2", false, "range_read")
            .await
            .expect("finish")
    );
    let ended = api
        .imports()
        .get(&PrincipalId::owner(), import.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        (ended.state, ended.records_read, ended.people_created),
        (ImportState::Completed, 4, 4),
        "each message read once: Ada, Bob, Carol and Dan"
    );
}

#[tokio::test]
async fn a_cancelled_import_is_not_read() {
    let fake = provider().await;
    let db = testkit::TestDatabase::new().await;
    let refresher = synced(&db, &fake, None).await;
    let api = db.store_as("api").await;
    let import = started(start(&api, 10, 0, 100, "0").await);
    let cancelled = api
        .imports()
        .cancel(&PrincipalId::owner(), import.id)
        .await
        .expect("cancel")
        .expect("row");
    assert_eq!(
        (cancelled.state, cancelled.stop_reason.as_deref()),
        (ImportState::Cancelled, Some("cancelled"))
    );
    assert_eq!(refresher.import_turn("async-1", LEASE).await.expect("turn"), None);
    assert!(names(&db).await.is_empty());
    // The next import may start.
    assert!(matches!(start(&api, 10, 0, 100, "0").await, Started::Started(_)));
}

#[tokio::test]
async fn the_spending_cap_ends_an_import_at_the_first_request_it_cannot_afford() {
    let fake = provider().await;
    // A second message the owner sent, two days ago, in the same words.
    let raw = mail_builder::MessageBuilder::new()
        .from("owner@example.org")
        .to("erin@example.com")
        .subject("Calls")
        .date(day(2).1)
        .text_body("I prefer calls in the morning.")
        .write_to_vec()
        .expect("built");
    fake.deliver_raw("owner", &raw, &["SENT"], None);
    let model = FakeModel::start(|_, body| {
        let memory = body["messages"][0]["content"]
            .as_str()
            .is_some_and(|text| text.starts_with("You keep the owner's memory."));
        let answer = if memory {
            json!({ "beliefs": [{ "kind": "preference", "statement": "Takes calls before noon" }] })
        } else {
            json!({ "importance": "normal", "reply_need": "no_reply_needed", "gist": "A note" })
        };
        Reply::frames(vec![
            testkit::model::content(&answer.to_string()),
            testkit::model::finish("stop"),
            testkit::model::usage(100, 10),
        ])
    })
    .await;
    let db = testkit::TestDatabase::new().await;
    let refresher = synced(&db, &fake, Some(&model)).await;
    let asked_before = model.bodies().len();
    let charges = async || -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM email_charges")
            .fetch_one(&db.pool)
            .await
            .expect("charges")
    };
    let charged_before = charges().await;
    // The cap fits one request's ceiling (the words are the same, so both ceilings are): the
    // first is sent and charged its reported usage, and the second no longer fits.
    let Classifier::Model(classifier) = refresher.classifier.as_ref() else {
        panic!("the model classifier")
    };
    let ceiling = classifier
        .prepare_beliefs("I prefer calls in the morning.\n", None)
        .ceiling;
    let cap = Cost::from_micros(ceiling.micros() + 1);
    let api = db.store_as("api").await;
    let import = started(start(&api, 10, 0, 100, &cap.to_string()).await);
    let ended = run(&refresher, &api, import.id).await;
    assert_eq!(ended.stop_reason.as_deref(), Some("spending_cap"));
    // 100 input and 10 output tokens at USD 1 per million.
    assert_eq!(ended.spent, Cost::from_micros(110));
    assert_eq!(ended.beliefs_formed, 1);
    assert_eq!(model.bodies().len(), asked_before + 1, "one request; none past the cap");
    assert_eq!(
        charges().await,
        charged_before + 1,
        "the email allowances were charged too"
    );

    // A cap of a millionth of a dollar fits no request at all.
    let second = started(start(&api, 10, 0, 100, "0.000001").await);
    let ended = run(&refresher, &api, second.id).await;
    assert_eq!(
        (ended.stop_reason.as_deref(), ended.spent),
        (Some("spending_cap"), Cost::from_micros(0))
    );
    assert_eq!(model.bodies().len(), asked_before + 1);
}
