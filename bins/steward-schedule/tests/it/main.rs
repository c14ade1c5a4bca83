//! Two `steward-schedule` processes against one database fire each of 1,000 due occurrences
//! exactly once; the role refuses the environments it must never start with.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::TestDatabase;

#[tokio::test]
async fn two_schedule_processes_fire_each_occurrence_exactly_once() {
    let db = TestDatabase::new().await;
    let flags = domain::flags::FeatureFlags::default();
    let agents =
        domain::agent::AgentRegistry::compose(vec![domain::agent::AgentDefinition::builtin_default()], &flags, None)
            .expect("agents");
    let agent = agents.get("default").expect("agent");
    sqlx::query("INSERT INTO agent_versions (agent_id, version, configuration) VALUES ('default', $1, '{}')")
        .bind(agent.version.as_str())
        .execute(&db.pool)
        .await
        .expect("agent version");
    // 1,000 schedules, all due a moment ago (within their grace).
    sqlx::query(
        "INSERT INTO schedules (id, principal_id, title, instruction, agent_id, agent_version, policy_profile,
             requested_scopes, max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
             cadence_kind, local_time, timezone, misfire_grace_seconds, max_consecutive_failures, state, next_fire_at)
         SELECT gen_random_uuid(), 'owner', 'due ' || n, 'hello', 'default', $1, 'default', '{}', 8, 8, 8, 1000000, 300,
                'DAILY', '07:00:00', 'UTC', 3600, 3, 'active', now() - interval '1 second'
         FROM generate_series(1, 1000) AS n",
    )
    .bind(agent.version.as_str())
    .execute(&db.pool)
    .await
    .expect("schedules");

    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_steward-schedule"))
            .env("DATABASE_URL", db.url_as("schedule"))
            .env("STEWARD_DEV_ALLOW_ROOT", "1")
            .env("SCHEDULE_POLL_MILLISECONDS", "50")
            .env("LOG_LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start steward-schedule")
    };
    let (mut first, mut second) = (spawn(), spawn());
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
