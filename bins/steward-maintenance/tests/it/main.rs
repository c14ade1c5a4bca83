//! The maintenance role against a real database, with its own login: each retention task
//! removes exactly what has expired at the instant it is given and nothing else, twice at once
//! without error; the running role tells systemd it is ready, counts each removal in a log line
//! without content, and refuses a bad configuration.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use store::retention::{Retention, Task};
use testkit::TestDatabase;
use testkit::roles::Process;
use uuid::Uuid;

const DAY: SignedDuration = SignedDuration::from_hours(24);
const HOUR: SignedDuration = SignedDuration::from_hours(1);

fn at(instant: Timestamp) -> jiff_sqlx::Timestamp {
    jiff_sqlx::Timestamp::from(instant)
}

/// A session of the owner, inserted as the test's superuser.
async fn session(db: &TestDatabase) -> Uuid {
    sqlx::query(
        "INSERT INTO agent_versions (agent_id, version, configuration) VALUES ('default', 'v1', '{}')
         ON CONFLICT DO NOTHING",
    )
    .execute(&db.pool)
    .await
    .expect("agent version");
    sqlx::query_scalar(
        "INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version)
         VALUES (gen_random_uuid(), 'owner', (SELECT coalesce(max(index_position), 0) + 1 FROM sessions), 'default', 'v1')
         RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .expect("session")
}

/// An artifact of `session` uploaded at `uploaded`, with `chunks` chunks of bytes.
async fn artifact(db: &TestDatabase, session: Uuid, uploaded: Timestamp, chunks: i32) -> Uuid {
    let id = Uuid::now_v7();
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO artifact_chunks (artifact_id, seq, bytes) SELECT $1, n, '\\x00010203' FROM generate_series(0, $2 - 1) n",
    )
    .bind(id)
    .bind(chunks)
    .execute(&mut *tx)
    .await
    .expect("chunks");
    sqlx::query(
        "INSERT INTO artifacts (id, session_id, filename, media_type, size_bytes, sha256, created_at)
         VALUES ($1, $2, 'notes.txt', 'text/plain', 4, repeat('a', 64), $3)",
    )
    .bind(id)
    .bind(session)
    .bind(at(uploaded))
    .execute(&mut *tx)
    .await
    .expect("artifact");
    tx.commit().await.expect("commit");
    id
}

async fn count(db: &TestDatabase, query: &str) -> i64 {
    sqlx::query_scalar(query).fetch_one(&db.pool).await.expect(query)
}

async fn expire(store: &store::Store, task: Task, now: Timestamp) -> u64 {
    store
        .expire(task, &Retention::default(), now, 1000)
        .await
        .unwrap_or_else(|error| panic!("{}: {error}", task.name()))
}

#[tokio::test]
async fn artifact_bytes_go_after_the_artifact_retention_and_the_metadata_stays() {
    let db = TestDatabase::new().await;
    let maintenance = db.store_as("maintenance").await;
    let now = Timestamp::now();
    let session = session(&db).await;
    let old = artifact(&db, session, now - DAY * 90 - HOUR, 3).await;
    let young = artifact(&db, session, now - DAY * 90 + HOUR, 2).await;

    assert_eq!(expire(&maintenance, Task::ArtifactBytes, now).await, 1);
    let rows: Vec<(Uuid, bool, i64)> = sqlx::query_as(
        "SELECT a.id, a.expired_at IS NOT NULL, (SELECT count(*) FROM artifact_chunks c WHERE c.artifact_id = a.id)
         FROM artifacts a ORDER BY a.id",
    )
    .fetch_all(&db.pool)
    .await
    .expect("artifacts");
    assert_eq!(rows, vec![(old, true, 0), (young, false, 2)]);
    assert_eq!(expire(&maintenance, Task::ArtifactBytes, now).await, 0, "once");
    // A shorter retention, as ARTIFACT_RETENTION_DAYS sets it, takes the younger one too.
    let short = Retention {
        artifacts: DAY,
        ..Retention::default()
    };
    assert_eq!(
        maintenance
            .expire(Task::ArtifactBytes, &short, now, 10)
            .await
            .expect("expire"),
        1
    );
    assert_eq!(count(&db, "SELECT count(*) FROM artifact_chunks").await, 0);
}

#[tokio::test]
async fn idempotency_records_go_after_their_window() {
    let db = TestDatabase::new().await;
    let maintenance = db.store_as("maintenance").await;
    let now = Timestamp::now();
    for (key, age) in [("old", DAY * 7 + HOUR), ("young", DAY * 7 - HOUR)] {
        sqlx::query(
            "INSERT INTO idempotency_keys (principal_id, key, operation, request_hash, response_status, response_body, created_at)
             VALUES ('owner', $1, 'sessions.submit', 'h', 201, '\\x7b7d', $2)",
        )
        .bind(key)
        .bind(at(now - age))
        .execute(&db.pool)
        .await
        .expect("key");
    }
    assert_eq!(expire(&maintenance, Task::IdempotencyRecords, now).await, 1);
    let left: Vec<String> = sqlx::query_scalar("SELECT key FROM idempotency_keys")
        .fetch_all(&db.pool)
        .await
        .expect("keys");
    assert_eq!(left, vec!["young".to_owned()]);
}

#[tokio::test]
async fn only_accepted_folder_proposals_go_after_their_window() {
    let db = TestDatabase::new().await;
    let maintenance = db.store_as("maintenance").await;
    let now = Timestamp::now();
    let session = session(&db).await;
    for (name, status, settled) in [
        ("accepted old", "accepted", Some(DAY * 30 + HOUR)),
        ("accepted young", "accepted", Some(DAY * 30 - HOUR)),
        ("declined old", "declined", Some(DAY * 300)),
        ("pending old", "pending", None),
    ] {
        let proposal: Uuid = sqlx::query_scalar(
            "INSERT INTO folder_proposals (id, principal_id, folder_name, status, invocation_id, created_at, resolved_at)
             VALUES (gen_random_uuid(), 'owner', $1, $2, gen_random_uuid(), $3, $4) RETURNING id",
        )
        .bind(name)
        .bind(status)
        .bind(at(now - DAY * 400))
        .bind(settled.map(|age| at(now - age)))
        .fetch_one(&db.pool)
        .await
        .expect("proposal");
        sqlx::query("INSERT INTO folder_proposal_sessions (proposal_id, session_id) VALUES ($1, $2)")
            .bind(proposal)
            .bind(session)
            .execute(&db.pool)
            .await
            .expect("proposal session");
    }
    assert_eq!(expire(&maintenance, Task::FolderProposals, now).await, 1);
    let left: Vec<String> = sqlx::query_scalar("SELECT folder_name FROM folder_proposals ORDER BY folder_name")
        .fetch_all(&db.pool)
        .await
        .expect("proposals");
    assert_eq!(left, vec!["accepted young", "declined old", "pending old"]);
    assert_eq!(count(&db, "SELECT count(*) FROM folder_proposal_sessions").await, 3);
}

#[tokio::test]
async fn web_sessions_go_at_their_expiry() {
    let db = TestDatabase::new().await;
    let maintenance = db.store_as("maintenance").await;
    let now = Timestamp::now();
    for (expires, byte) in [(now - HOUR, 1), (now + HOUR, 2)] {
        sqlx::query(
            "INSERT INTO web_sessions (id, secret_digest, token_binding, principal_id, scopes, created_at, expires_at)
             VALUES (gen_random_uuid(), decode(repeat(to_hex($1::int + 16), 32), 'hex'), decode(repeat('00', 32), 'hex'),
                     'owner', '{sessions.read}', $2, $3)",
        )
        .bind(byte)
        .bind(at(now - DAY))
        .bind(at(expires))
        .execute(&db.pool)
        .await
        .expect("web session");
    }
    assert_eq!(expire(&maintenance, Task::WebSessions, now).await, 1);
    let left: Vec<bool> = sqlx::query_scalar("SELECT expires_at > $1 FROM web_sessions")
        .bind(at(now))
        .fetch_all(&db.pool)
        .await
        .expect("web sessions");
    assert_eq!(left, vec![true]);
}

#[tokio::test]
async fn settled_notifications_go_after_their_window_and_pending_or_unwithdrawn_ones_stay() {
    let db = TestDatabase::new().await;
    let maintenance = db.store_as("maintenance").await;
    let now = Timestamp::now();
    let session = session(&db).await;
    let old = Some(at(now - DAY * 30 - HOUR));
    let young = Some(at(now - DAY * 30 + HOUR));
    // (label, acknowledged, obsolete, delivered, withdrawn, expected to go)
    let cases = [
        ("acknowledged, never delivered", old, None, None, None, true),
        ("obsolete, delivered and withdrawn", None, old, old, old, true),
        ("acknowledged young", young, None, None, None, false),
        ("obsolete, delivered, not withdrawn", None, old, old, None, false),
        ("pending", None, None, old, None, false),
    ];
    let mut ids = Vec::new();
    for (label, acknowledged, obsolete, delivered, withdrawn, goes) in cases {
        let id: Uuid = sqlx::query_scalar(
            "INSERT INTO notification_outbox (id, kind, session_id, deliver_after, acknowledged_at, obsolete_at,
                                              delivered_at, withdrawn_at, created_at)
             VALUES (gen_random_uuid(), 'schedule_outcome', $1, $2, $3, $4, $5, $6, $2) RETURNING id",
        )
        .bind(session)
        .bind(at(now - DAY * 60))
        .bind(acknowledged)
        .bind(obsolete)
        .bind(delivered)
        .bind(withdrawn)
        .fetch_one(&db.pool)
        .await
        .unwrap_or_else(|error| panic!("{label}: {error}"));
        ids.push((id, label, goes));
    }
    assert_eq!(expire(&maintenance, Task::Notifications, now).await, 2);
    for (id, label, goes) in ids {
        let present = count(
            &db,
            &format!("SELECT count(*) FROM notification_outbox WHERE id = '{id}'"),
        )
        .await;
        assert_eq!(present == 0, goes, "{label}");
    }
}

#[tokio::test]
async fn settled_email_operations_go_after_their_window_and_what_is_still_read_stays() {
    let db = TestDatabase::new().await;
    let maintenance = db.store_as("maintenance").await;
    let now = Timestamp::now();
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
    let subscription: Uuid = sqlx::query_scalar(
        "INSERT INTO email_subscriptions (account_id, sender, last_arrival_at, evidence_message, digest)
         VALUES ('demo', 'news@shop.example', now(), 'm1', 'd') RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .expect("subscription");
    let old = now - DAY * 30 - HOUR;
    let young = now - DAY * 30 + HOUR;
    // (label, kind, state, reconciled, for a sender, settled at, expected to go)
    let cases = [
        ("older refresh", "refresh", "succeeded", false, false, old - HOUR, true),
        ("newest refresh", "refresh", "failed", false, false, old, false),
        ("archive succeeded", "archive", "succeeded", false, false, old, true),
        ("archive failed", "archive", "failed", false, false, old, true),
        (
            "archive uncertain, reconciled",
            "archive",
            "uncertain",
            true,
            false,
            old,
            true,
        ),
        ("archive uncertain", "archive", "uncertain", false, false, old, false),
        ("archive queued", "archive", "queued", false, false, old, false),
        ("archive young", "archive", "succeeded", false, false, young, false),
        ("spam report", "report_spam", "succeeded", false, false, old, true),
        (
            "spam report for a sender",
            "report_spam",
            "succeeded",
            false,
            true,
            old,
            false,
        ),
        ("unsubscribe", "unsubscribe", "succeeded", false, true, old, false),
    ];
    let mut ids = Vec::new();
    for (label, kind, state, reconciled, for_sender, settled, goes) in cases {
        let write = kind != "refresh" && kind != "unsubscribe";
        let id: Uuid = sqlx::query_scalar(
            "INSERT INTO email_operations (id, account_id, thread, kind, state, error, subscription, created_at, updated_at,
                                           reconciled_at)
             VALUES (gen_random_uuid(), 'demo', $1, $2, $3, CASE WHEN $3 IN ('failed', 'uncertain') THEN 'provider_error' END,
                     $4, $5, $5, $6)
             RETURNING id",
        )
        .bind(write.then_some(thread))
        .bind(kind)
        .bind(state)
        .bind(for_sender.then_some(subscription))
        .bind(at(settled))
        .bind(reconciled.then(|| at(settled)))
        .fetch_one(&db.pool)
        .await
        .unwrap_or_else(|error| panic!("{label}: {error}"));
        ids.push((id, label, goes));
    }
    assert_eq!(expire(&maintenance, Task::EmailOperations, now).await, 5);
    for (id, label, goes) in ids {
        let present = count(&db, &format!("SELECT count(*) FROM email_operations WHERE id = '{id}'")).await;
        assert_eq!(present == 0, goes, "{label}");
    }
    assert_eq!(expire(&maintenance, Task::EmailOperations, now).await, 0, "once");
}

/// Expired rows of every task: how many of each.
async fn expired_everywhere(db: &TestDatabase, now: Timestamp, each: i32) {
    let session = session(db).await;
    for _ in 0..each {
        artifact(db, session, now - DAY * 100, 1).await;
    }
    let long_ago = at(now - DAY * 100);
    for statement in [
        "INSERT INTO idempotency_keys (principal_id, key, operation, request_hash, response_status, response_body, created_at)
         SELECT 'owner', 'k' || n, 'sessions.submit', 'h', 201, '\\x7b7d', $2 FROM generate_series(1, $1) n",
        "INSERT INTO folder_proposals (id, principal_id, folder_name, status, invocation_id, created_at, resolved_at)
         SELECT gen_random_uuid(), 'owner', 'f' || n, 'accepted', gen_random_uuid(), $2, $2 FROM generate_series(1, $1) n",
        "INSERT INTO web_sessions (id, secret_digest, token_binding, principal_id, scopes, created_at, expires_at)
         SELECT gen_random_uuid(), sha256(n::text::bytea), sha256('b'::bytea), 'owner', '{}', $2 - interval '1 day', $2
         FROM generate_series(1, $1) n",
    ] {
        sqlx::query(statement)
            .bind(each)
            .bind(long_ago)
            .execute(&db.pool)
            .await
            .expect(statement);
    }
    sqlx::query(
        "INSERT INTO notification_outbox (id, kind, session_id, deliver_after, acknowledged_at, created_at)
         SELECT gen_random_uuid(), 'schedule_outcome', $3, $2, $2, $2 FROM generate_series(1, $1) n",
    )
    .bind(each)
    .bind(long_ago)
    .bind(session)
    .execute(&db.pool)
    .await
    .expect("notifications");
    sqlx::query("INSERT INTO email_accounts (account_id) VALUES ('demo')")
        .execute(&db.pool)
        .await
        .expect("account");
    // One more refresh than expected: the newest stays.
    sqlx::query(
        "INSERT INTO email_operations (id, account_id, kind, state, created_at, updated_at)
         SELECT gen_random_uuid(), 'demo', 'refresh', 'succeeded', $2 + n * interval '1 second', $2
         FROM generate_series(0, $1) n",
    )
    .bind(each)
    .bind(long_ago)
    .execute(&db.pool)
    .await
    .expect("operations");
    sqlx::query(
        "INSERT INTO call_records (kind, provider_call_id, direction, state, transcript, summary, finished_at)
         SELECT 'call', 'call-' || n, 'inbound', 'finished', '[]', 'A call.', $2 FROM generate_series(1, $1) n",
    )
    .bind(each)
    .bind(long_ago)
    .execute(&db.pool)
    .await
    .expect("calls");
}

#[tokio::test]
async fn two_passes_of_every_task_at_once_remove_each_expired_record_once_without_error() {
    let db = TestDatabase::new().await;
    let now = Timestamp::now();
    let each = 120;
    expired_everywhere(&db, now, each).await;
    let (first, second) = (db.store_as("maintenance").await, db.store_as("maintenance").await);
    let retention = Retention::default();
    for task in Task::ALL {
        let mut removed = 0;
        // Batches of 50: the passes interleave over several rounds.
        loop {
            let (a, b) = tokio::join!(
                first.expire(task, &retention, now, 50),
                second.expire(task, &retention, now, 50),
            );
            let (a, b) = (
                a.unwrap_or_else(|error| panic!("{}: {error}", task.name())),
                b.unwrap_or_else(|error| panic!("{}: {error}", task.name())),
            );
            removed += a + b;
            if a + b == 0 {
                break;
            }
        }
        assert_eq!(removed, each as u64, "{}", task.name());
    }
    for (query, left) in [
        ("SELECT count(*) FROM artifact_chunks", 0),
        ("SELECT count(*) FROM artifacts WHERE expired_at IS NULL", 0),
        ("SELECT count(*) FROM idempotency_keys", 0),
        ("SELECT count(*) FROM folder_proposals", 0),
        ("SELECT count(*) FROM web_sessions", 0),
        ("SELECT count(*) FROM notification_outbox", 0),
        ("SELECT count(*) FROM email_operations", 1),
        (
            "SELECT count(*) FROM call_records WHERE transcript IS NOT NULL OR summary IS NOT NULL",
            0,
        ),
    ] {
        assert_eq!(count(&db, query).await, left, "{query}");
    }
}

fn maintenance(db: &TestDatabase) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_steward-maintenance"));
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("DATABASE_URL", db.url_as("maintenance"))
        .env("STEWARD_DEV_ALLOW_ROOT", "1")
        .env("LOG_LEVEL", "info");
    command
}

#[tokio::test]
async fn the_running_role_is_ready_and_counts_each_removal_without_content() {
    use std::os::unix::net::UnixDatagram;
    let db = TestDatabase::new().await;
    let now = Timestamp::now();
    expired_everywhere(&db, now, 3).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
    socket.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut process = Process(
        maintenance(&db)
            .env("NOTIFY_SOCKET", &socket_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start steward-maintenance"),
    );
    let mut buffer = [0u8; 256];
    let received = socket.recv(&mut buffer).expect("READY=1 within 20 s");
    assert!(
        String::from_utf8_lossy(&buffer[..received]).contains("READY=1"),
        "the role tells systemd it is ready"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&db, "SELECT count(*) FROM idempotency_keys").await > 0
        || count(&db, "SELECT count(*) FROM call_records WHERE summary IS NOT NULL").await > 0
    {
        assert!(Instant::now() < deadline, "the first pass removed everything expired");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SIGTERM, as systemd stops it: the role ends cleanly.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(process.0.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = process.0.wait().expect("wait");
    assert!(status.success(), "{status}");
    let mut output = String::new();
    for stream in [
        process.0.stdout.take().map(|s| Box::new(s) as Box<dyn Read>),
        process.0.stderr.take().map(|s| Box::new(s) as Box<dyn Read>),
    ]
    .into_iter()
    .flatten()
    {
        let mut stream = stream;
        stream.read_to_string(&mut output).expect("read the log");
    }
    for task in Task::ALL {
        let line = output
            .lines()
            .find(|line| {
                line.contains(&format!("task=\"{}\"", task.name())) || line.contains(&format!("task={}", task.name()))
            })
            .unwrap_or_else(|| panic!("no line for {}:\n{output}", task.name()));
        assert!(line.contains("removed=3"), "{line}");
    }
    for content in ["A call.", "notes.txt", "k1", "sessions.submit"] {
        assert!(
            !output.contains(content),
            "no content in the log ({content}):\n{output}"
        );
    }
}

#[tokio::test]
async fn a_bad_retention_is_refused_at_start_with_one_line() {
    let db = TestDatabase::new().await;
    for (value, reason) in [
        ("0", "`0` is not a positive integer"),
        ("ninety", "`ninety` is not a positive integer"),
        ("4000", "must be at most 3650 days"),
    ] {
        let output = maintenance(&db)
            .env("ARTIFACT_RETENTION_DAYS", value)
            .output()
            .expect("run steward-maintenance");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr
                .trim_end()
                .starts_with("steward-maintenance: ARTIFACT_RETENTION_DAYS")
                && stderr.trim_end().ends_with(reason)
                && stderr.lines().count() == 1,
            "{stderr}"
        );
    }
}

#[test]
fn the_binary_refuses_unknown_log_levels_and_inline_call_provider_keys() {
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-maintenance"));
    testkit::roles::assert_refuses_an_inline_call_provider_key(env!("CARGO_BIN_EXE_steward-maintenance"));
}
