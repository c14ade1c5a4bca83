//! The SDK against the real API on a real database: the connection's errors, the session index,
//! and message submission with its idempotent retry.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use client::{Client, ClientError, Submitted};
use testkit::TestDatabase;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wire::request::SubmitMessage;

const TOKEN: &str = "client-sdk-test-token-0123456789abcdefghij";

/// The API on a free loopback port with `scopes`; its base URL and database.
async fn api(scopes: &str) -> (String, TestDatabase, tempfile::TempDir) {
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token_file)
        .expect("token file");
    file.write_all(TOKEN.as_bytes()).expect("write token");
    let vars: HashMap<&str, String> = HashMap::from([
        ("DATABASE_URL", db.url_as("api")),
        ("API_TOKEN_FILE", token_file.display().to_string()),
        ("AUTH_SCOPES", scopes.to_owned()),
    ]);
    let config = api::ApiConfig::from_env(|name| vars.get(name).cloned()).expect("configuration");
    let app = api::app(config, db.store_as("api").await);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = api::serve(listener, app, std::future::pending()).await;
    });
    (base, db, dir)
}

fn message(text: &str) -> SubmitMessage {
    SubmitMessage {
        text: Some(text.to_owned()),
        attachments: Vec::new(),
    }
}

#[tokio::test]
async fn a_wrong_token_asks_to_connect_again_and_a_missing_scope_is_forbidden() {
    let (base, _db, _dir) = api("sessions.read").await;
    let wrong = Client::new(&base, "not-the-token-but-long-enough-0123456789").expect("client");
    let error = wrong.sessions().await.expect_err("refused");
    assert!(matches!(error, ClientError::Reauthenticate(_)), "{error:?}");
    assert_eq!(error.code(), Some("unauthenticated"));

    let client = Client::new(&base, TOKEN).expect("client");
    assert!(client.sessions().await.expect("readable").is_empty());
    let error = client
        .create_session("default", None)
        .await
        .expect_err("no sessions.write");
    assert!(matches!(error, ClientError::Forbidden(_)), "{error:?}");
    assert_eq!(error.code(), Some("insufficient_scope"));
}

#[tokio::test]
async fn the_index_is_read_to_its_end_across_pages() {
    let (base, _db, _dir) = api("sessions.read,sessions.write").await;
    let client = Client::new(&base, TOKEN).expect("client");
    let mut made = HashSet::new();
    for n in 0..230 {
        let session = client
            .create_session("default", Some(&format!("chat {n}")))
            .await
            .expect("create");
        made.insert(session.summary.session_id);
    }
    let listed: HashSet<_> = client
        .sessions()
        .await
        .expect("index")
        .into_iter()
        .map(|session| session.session_id)
        .collect();
    assert_eq!(listed, made, "three pages of 100, every session once");
}

#[tokio::test]
async fn a_repeated_cursor_is_refused() {
    // A server that keeps answering with the same cursor: following it would never end.
    let app = axum::Router::new().route(
        "/v1/sessions",
        axum::routing::get(|| async {
            axum::Json(serde_json::json!({ "sessions": [], "next_cursor": "the-same-cursor" }))
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::new(&base, TOKEN).expect("client");
    let error = client.sessions().await.expect_err("refused");
    assert!(matches!(error, ClientError::RepeatedCursor), "{error:?}");
}

#[tokio::test]
async fn a_second_message_attaches_to_the_active_run_and_queues_nothing() {
    let (base, db, _dir) = api("sessions.read,sessions.write").await;
    let client = Client::new(&base, TOKEN).expect("client");
    let session = client
        .create_session("default", None)
        .await
        .expect("create")
        .summary
        .session_id;
    // No worker runs here: the first run stays queued, so it is the active run.
    let first = client.submit(session, &message("first")).await.expect("submit");
    let Submitted::Accepted(run) = &first else {
        panic!("accepted: {first:?}");
    };
    let second = client.submit(session, &message("second")).await.expect("attach");
    assert_eq!(second, Submitted::Attached(run.run_id));
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE session_id = $1")
        .bind(session)
        .fetch_one(&db.pool)
        .await
        .expect("count runs");
    assert_eq!(runs, 1, "nothing was queued");
}

/// A proxy to `upstream` that lets the first request through but drops its answer, closing the
/// connection instead; later connections pass untouched.
async fn dropping_proxy(upstream: String) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("address"));
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let upstream = upstream.trim_start_matches("http://").to_owned();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let mut server = TcpStream::connect(&upstream).await.expect("upstream");
            if flag.swap(true, Ordering::SeqCst) {
                tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                continue;
            }
            tokio::spawn(async move {
                // Forward the request, wait for the answer to start, then hang up on the client.
                let mut buffer = vec![0u8; 64 * 1024];
                let read = client.read(&mut buffer).await.expect("request");
                server.write_all(&buffer[..read]).await.expect("forward");
                let _ = server.read(&mut buffer).await;
                drop(client);
            });
        }
    });
    (address, dropped)
}

#[tokio::test]
async fn a_retry_after_a_lost_answer_finds_the_run_the_first_attempt_made() {
    let (base, db, _dir) = api("sessions.read,sessions.write").await;
    let direct = Client::new(&base, TOKEN).expect("client");
    let session = direct
        .create_session("default", None)
        .await
        .expect("create")
        .summary
        .session_id;
    let (proxy, dropped) = dropping_proxy(base).await;
    let through = Client::new(&proxy, TOKEN).expect("client");
    let submitted = through.submit(session, &message("once only")).await.expect("retried");
    assert!(dropped.load(Ordering::SeqCst), "the first answer was lost");
    let Submitted::Accepted(run) = submitted else {
        panic!("the retry is answered as the first attempt was: {submitted:?}");
    };
    let runs: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT id FROM runs WHERE session_id = $1")
        .bind(session)
        .fetch_all(&db.pool)
        .await
        .expect("runs");
    assert_eq!(runs, vec![run.run_id], "one run, the one the retry reported");
}

/// A proxy to `upstream` that cuts each of its first `cuts` connections after a pseudo-random
/// number of answer bytes (a new point each run); later connections pass untouched.
async fn cutting_proxy(upstream: String, cuts: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::AtomicUsize;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("address"));
    let made = Arc::new(AtomicUsize::new(0));
    let count = made.clone();
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_nanos() as u64
        | 1;
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let server = TcpStream::connect(&upstream).await.expect("upstream");
            if count.load(Ordering::SeqCst) >= cuts {
                tokio::spawn(async move {
                    let (mut client, mut server) = (client, server);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                continue;
            }
            count.fetch_add(1, Ordering::SeqCst);
            // xorshift: where this connection is cut, somewhere in its first 24 KiB.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let budget = 300 + (seed % (24 * 1024)) as usize;
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                let mut left = budget;
                let mut buffer = vec![0u8; 4096];
                while left > 0 {
                    let Ok(read) = server_read.read(&mut buffer).await else {
                        break;
                    };
                    if read == 0 {
                        break;
                    }
                    let take = read.min(left);
                    if client_write.write_all(&buffer[..take]).await.is_err() {
                        break;
                    }
                    left -= take;
                }
                // Cut: both halves dropped here.
            });
        }
    });
    (address, made)
}

#[tokio::test]
async fn the_stream_through_random_cuts_yields_every_persisted_event_once_in_order() {
    const EVENTS: i64 = 300;
    let (base, db, _dir) = api("sessions.read,sessions.write").await;
    let direct = Client::new(&base, TOKEN).expect("client");
    let session = direct
        .create_session("default", None)
        .await
        .expect("create")
        .summary
        .session_id;
    let run = uuid::Uuid::new_v4();
    sqlx::query(
        "INSERT INTO events (session_id, seq, run_id, kind, payload, created_at)
         SELECT $1, n, NULL,
           CASE WHEN n = $3 THEN 'run.completed' WHEN n % 2 = 1 THEN 'user.message.created' ELSE 'assistant.message' END,
           CASE WHEN n = $3 THEN jsonb_build_object('run_id', $2::uuid, 'state', 'completed',
                  'usage', jsonb_build_object('steps', 1, 'model_calls', 1, 'tool_calls', 0,
                                              'input_tokens', 1, 'output_tokens', 1, 'cost', '0'))
                WHEN n % 2 = 1 THEN jsonb_build_object('run_id', $2::uuid,
                  'message', jsonb_build_object('text', 'message ' || n || ' ' || repeat('x', 90), 'attachments', '[]'::jsonb))
                ELSE jsonb_build_object('run_id', $2::uuid, 'step', 1, 'text', 'answer ' || n || ' ' || repeat('y', 90),
                  'tool_calls', '[]'::jsonb, 'usage', jsonb_build_object('input_tokens', 1, 'output_tokens', 1, 'cost', '0'))
           END,
           clock_timestamp()
         FROM generate_series(1, $3) AS n",
    )
    .bind(session)
    .bind(run)
    .bind(EVENTS)
    .execute(&db.pool)
    .await
    .expect("seed events");
    sqlx::query("UPDATE sessions SET last_event_seq = $2 WHERE id = $1")
        .bind(session)
        .bind(EVENTS)
        .execute(&db.pool)
        .await
        .expect("session sequence");

    let (proxy, cut) = cutting_proxy(base, 6).await;
    let through = Client::new(&proxy, TOKEN).expect("client");
    let mut follow = through.follow(session, 0, Some(run));
    let mut seen = Vec::new();
    while let Some(update) = tokio::time::timeout(std::time::Duration::from_secs(60), follow.next())
        .await
        .expect("the stream keeps moving")
    {
        if let client::Update::Event(frame) = update.expect("no refusal") {
            seen.push(frame.seq);
        }
    }
    assert!(
        cut.load(Ordering::SeqCst) >= 3,
        "the proxy cut {} connections",
        cut.load(Ordering::SeqCst)
    );
    assert_eq!(seen, (1..=EVENTS).collect::<Vec<_>>(), "every event once, in order");
    assert_eq!(follow.cursor(), EVENTS);
}
