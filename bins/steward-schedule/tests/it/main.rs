//! Two `steward-schedule` processes against one database fire each of 1,000 due occurrences
//! exactly once; mail-scoped firings are authorized from the accounts manifest's ids; the role
//! refuses the environments it must never start with.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::TestDatabase;

/// Registers the built-in agent's version; returns it.
async fn agent_version(db: &TestDatabase) -> String {
    let flags = domain::flags::FeatureFlags::default();
    let agents =
        domain::agent::AgentRegistry::compose(vec![domain::agent::AgentDefinition::builtin_default()], &flags, None)
            .expect("agents");
    let version = agents.get("default").expect("agent").version.as_str().to_owned();
    sqlx::query("INSERT INTO agent_versions (agent_id, version, configuration) VALUES ('default', $1, '{}')")
        .bind(&version)
        .execute(&db.pool)
        .await
        .expect("agent version");
    version
}

/// Adds `count` daily schedules with `scopes`, all due a moment ago (within their grace).
async fn due_schedules(db: &TestDatabase, version: &str, count: i32, scopes: &[&str]) {
    sqlx::query(
        "INSERT INTO schedules (id, principal_id, title, instruction, agent_id, agent_version, policy_profile,
             requested_scopes, max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
             cadence_kind, local_time, timezone, misfire_grace_seconds, max_consecutive_failures, state, next_fire_at)
         SELECT gen_random_uuid(), 'owner', 'due ' || n, 'hello', 'default', $1, 'default', $3, 8, 8, 8, 1000000, 300,
                'DAILY', '07:00:00', 'UTC', 3600, 3, 'active', now() - interval '1 second'
         FROM generate_series(1, $2) AS n",
    )
    .bind(version)
    .bind(count)
    .bind(scopes)
    .execute(&db.pool)
    .await
    .expect("schedules");
}

fn spawn_scheduler(db: &TestDatabase, mail: &[(&str, &str)]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_steward-schedule"))
        .env("DATABASE_URL", db.url_as("schedule"))
        .env("STEWARD_DEV_ALLOW_ROOT", "1")
        .env("SCHEDULE_POLL_MILLISECONDS", "50")
        .env("LOG_LEVEL", "warn")
        .envs(mail.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start steward-schedule")
}

#[tokio::test]
async fn two_schedule_processes_fire_each_occurrence_exactly_once() {
    let db = TestDatabase::new().await;
    let version = agent_version(&db).await;
    due_schedules(&db, &version, 1000, &[]).await;

    let (mut first, mut second) = (spawn_scheduler(&db, &[]), spawn_scheduler(&db, &[]));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let fired: i64 = sqlx::query_scalar("SELECT count(*) FROM schedule_occurrences")
            .fetch_one(&db.pool)
            .await
            .expect("count");
        let due: i64 = sqlx::query_scalar("SELECT count(*) FROM schedules WHERE next_fire_at <= now()")
            .fetch_one(&db.pool)
            .await
            .expect("count");
        if fired >= 1000 && due == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "only {fired} of 1000 fired");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for child in [&mut first, &mut second] {
        assert!(
            child.try_wait().expect("status").is_none(),
            "both processes were still running"
        );
        child.kill().expect("stop");
        assert_eq!(child.wait().expect("wait").signal(), Some(9));
    }
    let (total, distinct, runs): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT (schedule_id, scheduled_for)),
                (SELECT count(*) FROM runs WHERE occurrence_id IS NOT NULL) FROM schedule_occurrences",
    )
    .fetch_one(&db.pool)
    .await
    .expect("counts");
    assert_eq!(
        (total, distinct, runs),
        (1000, 1000, 1000),
        "each occurrence fired exactly once"
    );
    // Written once, each occurrence names its own session and run (their keys checked at commit);
    // each fresh session holds exactly its first event, the run's message, at sequence 1, and its
    // counter says so.
    let (named, consistent): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE o.session_id IS NOT NULL AND o.run_id IS NOT NULL),
                count(*) FILTER (WHERE r.session_id = o.session_id AND r.message_seq = 1 AND s.last_event_seq = 1
                                   AND (SELECT array_agg(e.seq::bigint) FROM events e WHERE e.session_id = s.id) = '{1}'
                                   AND (SELECT e.run_id FROM events e WHERE e.session_id = s.id) = r.id)
         FROM schedule_occurrences o
         JOIN runs r ON r.occurrence_id = o.id AND r.id = o.run_id
         JOIN sessions s ON s.id = o.session_id",
    )
    .fetch_one(&db.pool)
    .await
    .expect("occurrences");
    assert_eq!((named, consistent), (1000, 1000));
}

/// While the database is away the role keeps running, retrying; once it is back, the schedules
/// that fell due meanwhile fire, each once.
#[tokio::test]
async fn the_scheduler_rides_out_the_database_going_away() {
    let db = TestDatabase::new().await;
    let version = agent_version(&db).await;
    let relay = testkit::outage::DatabaseRelay::start(&db.url).await;
    let through = relay.url(&db.url_as("schedule"));
    let mut scheduler = spawn_scheduler(&db, &[("DATABASE_URL", &through)]);
    tokio::time::sleep(Duration::from_millis(500)).await;

    relay.down();
    due_schedules(&db, &version, 20, &[]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        scheduler.try_wait().expect("status").is_none(),
        "the scheduler neither panicked nor exited"
    );
    let fired: i64 = sqlx::query_scalar("SELECT count(*) FROM schedule_occurrences")
        .fetch_one(&db.pool)
        .await
        .expect("count");
    assert_eq!(fired, 0, "nothing fired while the database was away");

    relay.up();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (fired, distinct): (i64, i64) =
            sqlx::query_as("SELECT count(*), count(DISTINCT schedule_id) FROM schedule_occurrences")
                .fetch_one(&db.pool)
                .await
                .expect("count");
        if fired >= 20 {
            assert_eq!((fired, distinct), (20, 20), "each due schedule fired once");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {fired} of 20 fired after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scheduler.kill().expect("stop");
    scheduler.wait().expect("wait");
}

/// With a poll interval far longer than the test, the role still drains a backlog of more
/// than one batch without pausing, and wakes by itself when the next schedule falls due.
#[tokio::test]
async fn full_batches_go_on_at_once_and_the_role_wakes_when_the_next_schedule_is_due() {
    let db = TestDatabase::new().await;
    let version = agent_version(&db).await;
    due_schedules(&db, &version, 251, &[]).await;
    sqlx::query("UPDATE schedules SET next_fire_at = now() + interval '2 seconds' WHERE title = 'due 1'")
        .execute(&db.pool)
        .await
        .expect("one schedule due later");
    let mut scheduler = spawn_scheduler(&db, &[("SCHEDULE_POLL_MILLISECONDS", "600000")]);
    let count = |state: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
                 WHERE (s.title = 'due 1') = ($1 = 'later')",
            )
            .bind(state)
            .fetch_one(&pool)
            .await
            .expect("count")
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while count("backlog").await < 250 || count("later").await < 1 {
        assert!(
            Instant::now() < deadline,
            "{} of the 250 due and {} of the one due later fired within 30 s (the poll is 10 minutes)",
            count("backlog").await,
            count("later").await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lateness: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM o.created_at - o.scheduled_for)::float8 FROM schedule_occurrences o
         JOIN schedules s ON s.id = o.schedule_id WHERE s.title = 'due 1'",
    )
    .fetch_one(&db.pool)
    .await
    .expect("lateness");
    assert!(lateness < 1.5, "the later schedule fired {lateness} s after it was due");
    scheduler.kill().expect("stop");
    let _ = scheduler.wait();
}

/// A valid accounts manifest (`personal` and `work`) at `dir/accounts.json` with `mode`.
fn manifest(dir: &Path, mode: u32) -> String {
    let accounts: Vec<serde_json::Value> = ["personal", "work"]
        .iter()
        .map(|id| {
            serde_json::json!({ "account_id": id, "read_credential_file": format!("/etc/steward/mail/{id}/mail-read.json"),
                "write_credential_file": format!("/etc/steward/mail/{id}/mail-write.json"),
                "send_credential_file": format!("/etc/steward/mail/{id}/mail-send.json") })
        })
        .collect();
    let path = dir.join("accounts.json");
    let body = serde_json::json!({ "version": 1, "default_account": "personal", "accounts": accounts });
    std::fs::write(&path, body.to_string()).expect("manifest");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path.display().to_string()
}

/// The occurrences' `(state, reason)`, once `count` of them exist.
async fn occurrences(db: &TestDatabase, count: usize) -> Vec<(String, Option<String>)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows: Vec<(String, Option<String>)> =
            sqlx::query_as("SELECT state, reason FROM schedule_occurrences ORDER BY created_at")
                .fetch_all(&db.pool)
                .await
                .expect("occurrences");
        if rows.len() >= count {
            return rows;
        }
        assert!(Instant::now() < deadline, "only {} of {count} fired", rows.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn mail_scoped_firings_are_authorized_from_the_manifest_and_denied_once_it_is_unsafe() {
    let db = TestDatabase::new().await;
    let version = agent_version(&db).await;
    let dir = tempfile::tempdir().expect("tempdir");
    // Readable by the role's group, writable by its owner only: as deployed (0640).
    let path = manifest(dir.path(), 0o640);
    due_schedules(&db, &version, 1, &["mcp.mail_work_read.use", "mcp.mail_work_write.use"]).await;
    let mut scheduler = spawn_scheduler(&db, &[("AGENT_EMAIL_ENABLED", "1"), ("MAIL_ACCOUNTS_FILE", &path)]);
    let fired = occurrences(&db, 1).await;
    assert_eq!(
        fired,
        [("started".to_owned(), None)],
        "the work account's ids authorize it"
    );

    // A manifest anyone can now rewrite grants nothing: mail is unavailable to later firings.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    due_schedules(&db, &version, 1, &["mcp.mail_read.use"]).await;
    let fired = occurrences(&db, 2).await;
    assert_eq!(
        fired[1],
        ("failed".to_owned(), Some("schedule.authorization_failed".to_owned()))
    );
    assert!(scheduler.try_wait().expect("status").is_none(), "still running");
    scheduler.kill().expect("stop");
    scheduler.wait().expect("wait");
}

/// Runs `steward-schedule` with exactly `variables` and expects a refusal: status 2, one line.
fn refusal(variables: &[(&str, &str)]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_steward-schedule"))
        .env_clear()
        .envs(variables.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run steward-schedule");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("steward-schedule: "), "{stderr}");
    stderr
}

#[test]
fn refuses_an_inline_call_provider_key() {
    let stderr = refusal(&[
        ("DATABASE_URL", "postgres://steward_schedule@localhost/steward"),
        ("STEWARD_DEV_ALLOW_ROOT", "1"),
        ("CALLPROV_API_KEY", "inline-key"),
    ]);
    assert!(
        stderr.contains("CALLPROV_API_KEY is set: an inline call-provider key is refused"),
        "{stderr}"
    );
}

#[test]
fn refuses_an_invalid_environment_in_one_line() {
    let stderr = refusal(&[("STEWARD_DEV_ALLOW_ROOT", "1")]);
    assert!(stderr.contains("DATABASE_URL is required"), "{stderr}");
    let stderr = refusal(&[
        ("DATABASE_URL", "postgres://steward_schedule@localhost/steward"),
        ("STEWARD_DEV_ALLOW_ROOT", "1"),
        ("MAIL_ACCOUNTS_FILE", "/etc/steward/mail/accounts.json"),
    ]);
    assert!(
        stderr.contains("MAIL_ACCOUNTS_FILE is set while AGENT_EMAIL_ENABLED is off"),
        "{stderr}"
    );
}

#[test]
fn refuses_root_without_the_development_override() {
    if !nix::unistd::Uid::effective().is_root() {
        return; // Only root can be refused for being root.
    }
    let stderr = refusal(&[("DATABASE_URL", "postgres://steward_schedule@localhost/steward")]);
    assert!(stderr.contains("refusing to run as root"), "{stderr}");
}

#[test]
fn refuses_credential_paths_and_an_unsafe_or_malformed_manifest_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = manifest(dir.path(), 0o640);
    let writable = dir.path().join("writable.json");
    std::fs::copy(&good, &writable).expect("copy");
    std::fs::set_permissions(&writable, std::fs::Permissions::from_mode(0o664)).expect("chmod");
    let linked = dir.path().join("linked.json");
    std::os::unix::fs::symlink(&good, &linked).expect("symlink");
    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, r#"{"version": 2, "default_account": "a", "accounts": []}"#).expect("write");
    std::fs::set_permissions(&malformed, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let (writable, linked, malformed) = (
        writable.display().to_string(),
        linked.display().to_string(),
        malformed.display().to_string(),
    );
    let missing = dir.path().join("absent.json").display().to_string();
    let cases: [(&[(&str, &str)], &str); 7] = [
        (
            &[
                ("MAIL_ACCOUNTS_FILE", &good),
                ("MAIL_SEND_CREDENTIAL_FILE", "/etc/steward/mail/s.json"),
            ],
            "MAIL_SEND_CREDENTIAL_FILE is set: the scheduler never takes a mail credential path",
        ),
        (
            &[("MAIL_READ_CREDENTIAL_FILE", "/etc/steward/mail/r.json")],
            "MAIL_READ_CREDENTIAL_FILE is set: the scheduler never takes a mail credential path",
        ),
        (
            &[("MAIL_ACCOUNTS_FILE", "{\"version\": 1}")],
            "MAIL_ACCOUNTS_FILE must be an absolute path, never JSON or token material",
        ),
        (&[("MAIL_ACCOUNTS_FILE", &missing)], "does not exist"),
        (
            &[("MAIL_ACCOUNTS_FILE", &writable)],
            "must not be group- or world-writable (mode 0664)",
        ),
        (&[("MAIL_ACCOUNTS_FILE", &linked)], "is a symbolic link"),
        (&[("MAIL_ACCOUNTS_FILE", &malformed)], "version 1"),
    ];
    for (mail, expected) in cases {
        let mut variables = vec![
            ("DATABASE_URL", "postgres://steward_schedule@localhost/steward"),
            ("STEWARD_DEV_ALLOW_ROOT", "1"),
            ("AGENT_EMAIL_ENABLED", "1"),
        ];
        variables.extend_from_slice(mail);
        let stderr = refusal(&variables);
        assert!(stderr.contains(expected), "{mail:?}: expected `{expected}` in {stderr}");
    }
}

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-schedule"));
}
