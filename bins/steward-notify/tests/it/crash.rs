//! The notify role killed with SIGKILL in the middle of a batch loses nothing.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::support_and_delivery::{device, notification, received, setup};

fn private_file(dir: &std::path::Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .expect("create");
    file.write_all(contents.as_bytes()).expect("write");
    path.display().to_string()
}

#[tokio::test]
async fn a_notifier_killed_mid_batch_loses_no_notification() {
    let setup = setup().await;
    device(&setup, "phone", &"a".repeat(64), "sandbox").await;
    let mut ids = HashSet::new();
    for _ in 0..20 {
        ids.insert(notification(&setup, "question").await);
    }
    let dir = tempfile_dir();
    let key_file = private_file(&dir, "apns.p8", &setup.signing_pem);
    let ca_file = private_file(&dir, "ca.pem", &setup.fake.ca_pem);

    // The provider holds the first push: the notifier has claimed the batch and is mid-send.
    setup.fake.hold.store(true, Ordering::SeqCst);
    let mut notifier = spawn_notifier(&setup.db.url_as("notify"), &setup.fake.url, &key_file, &ca_file);
    let deadline = Instant::now() + Duration::from_secs(20);
    while received(&setup).is_empty() {
        assert!(Instant::now() < deadline, "the notifier never pushed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let claimed: i64 = sqlx::query_scalar("SELECT count(*) FROM notification_outbox WHERE claimed_by IS NOT NULL")
        .fetch_one(&setup.db.pool)
        .await
        .expect("claims");
    assert!(claimed > 1, "the kill lands mid-batch: {claimed} notifications claimed");
    notifier.kill().expect("SIGKILL");
    assert_eq!(notifier.wait().expect("wait").signal(), Some(9));
    setup.fake.hold.store(false, Ordering::SeqCst);

    // Another notifier picks the batch up once the dead one's claims expire.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
        let undelivered: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL")
                .fetch_one(&setup.db.pool)
                .await
                .expect("count");
        if undelivered == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{undelivered} notifications were never delivered"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM notification_outbox")
        .fetch_one(&setup.db.pool)
        .await
        .expect("count");
    assert_eq!(rows, 20, "no outbox row was lost");
    let pushes = received(&setup);
    let delivered: HashSet<uuid::Uuid> = pushes
        .iter()
        .filter_map(|r| r.header("apns-collapse-id").and_then(|id| id.parse().ok()))
        .collect();
    assert_eq!(delivered, ids, "every notification reached the device");
    assert!(
        pushes.len() <= 21,
        "only the push in flight at the kill may repeat: {} pushes",
        pushes.len()
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `steward-notify` on `database_url`, pushing to the APNs stand-in at `apns`.
fn spawn_notifier(database_url: &str, apns: &str, key_file: &str, ca_file: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_steward-notify"))
        .env("DATABASE_URL", database_url)
        .env("STEWARD_DEV_ALLOW_ROOT", "1")
        .env("AGENT_NOTIFICATION_API_ENABLED", "1")
        .env("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1")
        .env("APNS_TEAM_ID", "TEAM123456")
        .env("APNS_KEY_ID", "KEY1234567")
        .env("APNS_KEY_FILE", key_file)
        .env("APNS_TOPIC", "dev.steward.client")
        .env("APNS_SANDBOX_URL", format!("{apns}/sandbox"))
        .env("APNS_PRODUCTION_URL", format!("{apns}/production"))
        .env("APNS_CA_FILE", ca_file)
        .env("NOTIFY_LEASE_SECONDS", "2")
        .env("NOTIFY_POLL_MILLISECONDS", "100")
        .env("LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start steward-notify")
}

/// While the database is away the notifier keeps running; once it is back, what was queued
/// meanwhile is pushed, each once.
#[tokio::test]
async fn a_notifier_rides_out_the_database_going_away() {
    let setup = setup().await;
    device(&setup, "phone", &"c".repeat(64), "sandbox").await;
    let dir = tempfile_dir();
    let key_file = private_file(&dir, "apns.p8", &setup.signing_pem);
    let ca_file = private_file(&dir, "ca.pem", &setup.fake.ca_pem);
    let relay = testkit::outage::DatabaseRelay::start(&setup.db.url).await;
    let through = relay.url(&setup.db.url_as("notify"));
    let mut notifier = spawn_notifier(&through, &setup.fake.url, &key_file, &ca_file);
    tokio::time::sleep(Duration::from_millis(500)).await;

    relay.down();
    let mut ids = HashSet::new();
    for _ in 0..5 {
        ids.insert(notification(&setup, "question").await);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        notifier.try_wait().expect("status").is_none(),
        "the notifier neither panicked nor exited"
    );
    assert!(
        received(&setup).is_empty(),
        "nothing was pushed while the database was away"
    );

    relay.up();
    let deadline = Instant::now() + Duration::from_secs(30);
    while received(&setup).len() < ids.len() {
        assert!(Instant::now() < deadline, "the notifier did not resume");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pushes = received(&setup);
    let delivered: HashSet<uuid::Uuid> = pushes
        .iter()
        .filter_map(|r| r.header("apns-collapse-id").and_then(|id| id.parse().ok()))
        .collect();
    assert_eq!(delivered, ids);
    assert_eq!(pushes.len(), ids.len(), "each pushed once");
    notifier.kill().expect("SIGKILL");
    notifier.wait().expect("wait");
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("steward-notify-test-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).expect("temp dir");
    dir
}
