//! The async worker's refresh against the stand-in and a real database, as the async-worker
//! login: the backfill, incremental updates (a new message, a label change), an expired history
//! id answered by a resync, assessment, and the refresh admission interval.

use std::sync::Arc;
use std::time::Duration;

use domain::email::EmailOperationState;
use email::refresh::{Refresher, UpdateKind, Updated};
use mail_mcp::accounts::ReadAccount;
use mail_mcp::document::{CredentialDocument, MailScope};
use mail_mcp::gmail::{Endpoints, GmailClient};
use testkit::TestDatabase;
use testkit::gmail::{FakeGmail, READONLY};

pub fn account(fake: &FakeGmail, mailbox: &str) -> ReadAccount {
    let refresh = fake.grant(mailbox, READONLY);
    let json = format!(
        r#"{{"client_id":"client","client_secret":"secret","refresh_token":"{refresh}","scope":"{READONLY}"}}"#
    );
    ReadAccount {
        account_id: "personal".into(),
        read: CredentialDocument::parse(json.as_bytes(), MailScope::Read, None).expect("read document"),
    }
}

pub fn gmail(fake: &FakeGmail) -> Arc<GmailClient> {
    Arc::new(
        GmailClient::new(Endpoints {
            api_base_url: fake.base_url.clone(),
            token_url: fake.token_url(),
            read_attempts: 2,
            read_backoff: Duration::from_millis(10),
            request_timeout: Duration::from_secs(5),
            quota_units_per_second: 1_000_000.0,
        })
        .expect("client"),
    )
}

/// (subject, labels, importance, reply need, rule) of every projected thread, by subject.
async fn threads(db: &TestDatabase) -> Vec<(String, Vec<String>, Option<String>, Option<String>, Option<String>)> {
    sqlx::query_as(
        "SELECT subject, labels, importance, reply_need, rule FROM email_threads
         WHERE account_id = 'personal' ORDER BY subject",
    )
    .fetch_all(&db.pool)
    .await
    .expect("threads")
}

/// A fresh database with the account `personal` recorded, and a refresher writing to it as the
/// async-worker login with a backfill window of `backfill_hours`.
pub async fn recorded(fake: &FakeGmail, backfill_hours: i64) -> (TestDatabase, Refresher) {
    let db = TestDatabase::new().await;
    let store = db.store_as("async-worker").await;
    ensure_accounts(&store, &["personal"]).await;
    let refresher = Refresher {
        store,
        gmail: gmail(fake),
        backfill: jiff::SignedDuration::from_hours(backfill_hours),
        classifier: Arc::new(email::classify::Classifier::Offline),
        census: None,
        junk: email::junk::JunkSettings::off(),
    };
    (db, refresher)
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_owned()).collect()
}

#[tokio::test]
async fn backfill_then_history_then_a_resync_after_the_history_expired() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    let (db, refresher) = recorded(&fake, 30 * 24).await;
    let store = refresher.store.clone();
    let account = account(&fake, "owner");

    // Awaiting the first update.
    let before = account_state(&store, "personal").await;
    assert_eq!((before.updated_at, before.history_id.as_deref()), (None, None));

    // The owner wrote to Ada earlier: she is a known correspondent.
    let hello = mail_builder::MessageBuilder::new()
        .from("owner@example.org")
        .to("ada@example.com")
        .subject("Hello Ada")
        .text_body("Long time no see.")
        .write_to_vec()
        .expect("built");
    fake.deliver_raw("owner", &hello, &["SENT"], None);
    let letter = fake.deliver_raw("owner", &crate::newsletter(), &["INBOX"], None);
    let lunch = fake.deliver(
        "owner",
        "ada@example.com",
        "Lunch",
        "Are you free on Friday?",
        &["INBOX"],
    );
    let started = jiff::Timestamp::now();
    let updated = refresher.update(&account).await.expect("backfill");
    assert_eq!(
        updated,
        Updated {
            kind: UpdateKind::Backfill,
            new_messages: 3,
            relabelled: 0,
            assessed: 3
        }
    );
    let state = account_state(&store, "personal").await;
    assert_eq!(state.address.as_deref(), Some("owner@example.org"));
    assert!(state.updated_at.is_some_and(|at| at >= started), "{state:?}");
    let coverage = state.coverage_from.expect("coverage recorded");
    let window = started.duration_since(coverage);
    assert!(
        window >= jiff::SignedDuration::from_hours(30 * 24 - 1) && window <= jiff::SignedDuration::from_hours(30 * 24),
        "{window:?}"
    );
    assert_eq!(state.last_error, None);
    let projected = threads(&db).await;
    assert_eq!(
        projected,
        [
            (
                "Hello Ada".into(),
                strings(&["SENT"]),
                Some("other".into()),
                None,
                Some("from_owner".into())
            ),
            (
                "Lunch".into(),
                strings(&["INBOX"]),
                Some("important".into()),
                Some("needs_reply".into()),
                Some("known_correspondent".into())
            ),
            (
                "This week".into(),
                strings(&["INBOX"]),
                Some("other".into()),
                None,
                Some("bulk".into())
            ),
        ]
    );
    // Text and attachment metadata only; the HTML was reduced to text.
    let (body, gist): (String, Option<String>) = sqlx::query_as(
        "SELECT m.body, t.gist FROM email_messages m JOIN email_threads t ON t.id = m.thread
         WHERE m.provider_message_id = $1",
    )
    .bind(&letter)
    .fetch_one(&db.pool)
    .await
    .expect("message");
    assert!(
        body.contains("Ten things worth reading.") && !body.contains('<'),
        "{body}"
    );
    assert_eq!(gist.as_deref(), Some("Ten things worth reading."));

    // Incremental: a new message from someone unknown, and an archive made elsewhere.
    fake.deliver("owner", "bob@example.net", "Plans", "See you Friday.", &["INBOX"]);
    fake.relabel("owner", &letter, &[], &["INBOX"]);
    let updated = refresher.update(&account).await.expect("incremental");
    assert_eq!(
        updated,
        Updated {
            kind: UpdateKind::Incremental,
            new_messages: 1,
            relabelled: 1,
            assessed: 1
        }
    );
    let projected = threads(&db).await;
    assert_eq!(
        (
            projected[2].0.as_str(),
            projected[2].2.as_deref(),
            projected[2].4.as_deref()
        ),
        ("Plans", Some("other"), Some("unknown_sender"))
    );
    assert_eq!((projected[3].0.as_str(), projected[3].1.clone()), ("This week", vec![]));

    // Nothing new: nothing changes, and the update still counts as completed.
    let quiet = refresher.update(&account).await.expect("quiet");
    assert_eq!((quiet.new_messages, quiet.relabelled, quiet.assessed), (0, 0, 0));

    // The provider forgets the history: the next update resynchronises the window, bringing a
    // label change made meanwhile and a new message.
    fake.relabel("owner", &lunch, &["STARRED"], &[]);
    fake.deliver("owner", "carol@example.net", "Invoice", "Attached.", &["INBOX"]);
    fake.expire_history("owner");
    let updated = refresher.update(&account).await.expect("resync");
    assert_eq!(
        (updated.kind, updated.new_messages, updated.assessed),
        (UpdateKind::Resync, 1, 1)
    );
    let projected = threads(&db).await;
    assert_eq!(projected.len(), 5);
    let lunch_thread = projected.iter().find(|thread| thread.0 == "Lunch").expect("lunch");
    assert_eq!(lunch_thread.1, strings(&["INBOX", "STARRED"]));
    // Every provider call used the read document.
    let calls = fake.calls();
    assert!(calls.iter().all(|(_, scope, _)| scope == READONLY), "{calls:?}");
    assert!(
        calls.iter().any(|(_, _, call)| call == "GET messages.list"),
        "{calls:?}"
    );
}

#[tokio::test]
async fn a_failed_update_is_recorded_on_the_account_and_cleared_by_the_next() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    let (_db, refresher) = recorded(&fake, 24).await;
    let store = refresher.store.clone();
    let account = account(&fake, "owner");
    let revoked = ReadAccount {
        read: {
            let refresh = fake.grant("owner", READONLY);
            fake.revoke(&refresh);
            let json = format!(
                r#"{{"client_id":"client","client_secret":"secret","refresh_token":"{refresh}","scope":"{READONLY}"}}"#
            );
            CredentialDocument::parse(json.as_bytes(), MailScope::Read, None).expect("document")
        },
        ..account.clone()
    };
    let error = refresher.update(&revoked).await.expect_err("revoked grant");
    assert_eq!(error.code(), "mail.credential_rejected");
    let state = account_state(&store, "personal").await;
    assert_eq!(
        (state.last_error.as_deref(), state.updated_at),
        (Some("mail.credential_rejected"), None)
    );
    refresher.update(&account).await.expect("update");
    let state = account_state(&store, "personal").await;
    assert_eq!(state.last_error, None);
    assert!(state.updated_at.is_some());
}

#[tokio::test]
async fn a_refresh_is_admitted_at_most_once_a_minute_per_account() {
    let db = TestDatabase::new().await;
    let clock = Arc::new(testkit::ShiftedClock::default());
    let worker = db.store_as("async-worker").await;
    ensure_accounts(&worker, &["personal", "work"]).await;
    let api = db.store_as("api").await.with_clock(clock.clone());
    let minute = Duration::from_secs(60);
    let first = refresh_request(&api, "personal", minute).await;
    assert!(first.admitted);
    assert_eq!(
        (first.operation.kind.as_str(), first.operation.state.as_str()),
        ("refresh", "queued")
    );
    let second = refresh_request(&api, "personal", minute).await;
    assert_eq!((second.admitted, second.operation.id), (false, first.operation.id));
    // Another account has its own interval.
    let work = refresh_request(&api, "work", minute).await;
    assert!(work.admitted);
    assert!(
        api.email()
            .request_refresh(&"nobody".into(), minute)
            .await
            .expect("request")
            .is_none()
    );

    // The async worker claims it once, and settles it.
    let claimed = worker
        .email()
        .claim_refresh("async-1", Duration::from_secs(30))
        .await
        .expect("claim")
        .expect("due");
    assert_eq!(claimed.id, first.operation.id);
    worker.email().settle_refresh(claimed.id, None).await.expect("settle");
    let settled = api.email().operation(claimed.id).await.expect("read").expect("row");
    assert_eq!(settled.state, EmailOperationState::Succeeded);

    clock.advance(jiff::SignedDuration::from_secs(59));
    let held = refresh_request(&api, "personal", minute).await;
    assert!(!held.admitted);
    clock.advance(jiff::SignedDuration::from_secs(2));
    let third = refresh_request(&api, "personal", minute).await;
    assert!(third.admitted);
    assert_ne!(third.operation.id, first.operation.id);
}

/// The async worker on `store` for the stand-in's `owner` mailbox: an hour's cadence, polled
/// every 20 ms.
fn async_worker(fake: &FakeGmail, store: store::Store) -> email::worker::AsyncWorker {
    email::worker::AsyncWorker {
        refresher: Refresher {
            store,
            gmail: gmail(fake),
            backfill: jiff::SignedDuration::from_hours(24),
            classifier: Arc::new(email::classify::Classifier::Offline),
            census: None,
            junk: email::junk::JunkSettings::off(),
        },
        accounts: vec![account(fake, "owner")],
        worker_id: "async-test".into(),
        people: false,
        pace: email::worker::Pace {
            cadence: Duration::from_secs(3600),
            poll: Duration::from_millis(20),
            lease: Duration::from_secs(30),
        },
    }
}

#[tokio::test]
async fn the_async_worker_updates_every_account_at_start_and_runs_what_the_owner_requests() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    fake.deliver("owner", "ada@example.com", "First", "Hello there.", &["INBOX"]);
    let db = TestDatabase::new().await;
    let worker = async_worker(&fake, db.store_as("async-worker").await);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run(async move {
        let _ = stopped.await;
    }));
    let api = db.store_as("api").await;
    let settled = |subjects: usize| {
        let db = &db;
        async move {
            for _ in 0..500 {
                if threads(db).await.len() == subjects {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("never {subjects} threads: {:?}", threads(db).await);
        }
    };
    // At start: recorded, then updated (the background cadence is due at once).
    settled(1).await;

    // Mail arrives; within the cadence nothing would look, but the owner asks.
    fake.deliver("owner", "bob@example.net", "Second", "Hello again.", &["INBOX"]);
    let request = api
        .email()
        .request_refresh(&"personal".into(), Duration::from_secs(60))
        .await
        .expect("request")
        .expect("account");
    let mut state = EmailOperationState::Queued;
    for _ in 0..500 {
        state = api
            .email()
            .operation(request.operation.id)
            .await
            .expect("read")
            .expect("row")
            .state;
        if state == EmailOperationState::Succeeded {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state, EmailOperationState::Succeeded);
    settled(2).await;
    let _ = stop.send(());
    running.await.expect("stops");
}

/// The refresh state of the account `id`.
/// Records the accounts `ids` as configured.
pub async fn ensure_accounts(store: &store::Store, ids: &[&str]) {
    let ids: Vec<domain::ids::AccountId> = ids.iter().map(|&id| id.into()).collect();
    store.email().ensure_accounts(&ids).await.expect("accounts");
}

/// A provider whose mailbox `owner` holds one message: Ada asking the owner to lunch.
pub async fn lunch_invitation() -> FakeGmail {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    fake.deliver(
        "owner",
        "ada@example.com",
        "Lunch",
        "Are you free on Friday?",
        &["INBOX"],
    );
    fake
}

/// The id of the database's one conversation.
pub async fn only_thread(db: &TestDatabase) -> domain::ids::ThreadId {
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM email_threads")
        .fetch_one(&db.pool)
        .await
        .expect("one thread");
    id.into()
}

pub async fn account_state(store: &store::Store, id: &str) -> store::EmailAccountRow {
    store.email().account(&id.into()).await.expect("read").expect("row")
}

/// The owner's request for a refresh of the account `id` (admitted at most once per `interval`).
pub async fn refresh_request(store: &store::Store, id: &str, interval: Duration) -> store::RefreshRequest {
    store
        .email()
        .request_refresh(&id.into(), interval)
        .await
        .expect("request")
        .expect("account")
}

/// While the database is away the async worker keeps running (its claims fail and are retried);
/// once it is back, the refresh the owner asked for meanwhile runs, once.
#[tokio::test]
async fn the_async_worker_rides_out_the_database_going_away() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    fake.deliver("owner", "ada@example.com", "First", "Hello there.", &["INBOX"]);
    let db = TestDatabase::new().await;
    let relay = testkit::outage::DatabaseRelay::start(&db.url).await;
    let store =
        store::Store::connect_lazy(&relay.url(&db.url_as("async-worker")), 4).expect("a store through the relay");
    let worker = async_worker(&fake, store);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run(async move {
        let _ = stopped.await;
    }));
    for _ in 0..500 {
        if threads(&db).await.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(threads(&db).await.len(), 1, "the first update ran");

    relay.down();
    fake.deliver("owner", "bob@example.net", "Second", "Hello again.", &["INBOX"]);
    let api = db.store_as("api").await;
    let request = api
        .email()
        .request_refresh(&"personal".into(), Duration::from_secs(60))
        .await
        .expect("request")
        .expect("account");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!running.is_finished(), "the worker neither panicked nor stopped");
    let waiting = api
        .email()
        .operation(request.operation.id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(waiting.state, EmailOperationState::Queued);

    relay.up();
    let mut state = EmailOperationState::Queued;
    for _ in 0..1000 {
        state = api
            .email()
            .operation(request.operation.id)
            .await
            .expect("read")
            .expect("row")
            .state;
        if state == EmailOperationState::Succeeded {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state, EmailOperationState::Succeeded);
    assert_eq!(threads(&db).await.len(), 2, "the new mail is projected, once");
    let _ = stop.send(());
    running.await.expect("stops");
}
