//! The SDK against the real API on a real database: the connection's errors, the session index,
//! message submission with its idempotent retry, the event stream through cuts, approvals with
//! their digests, questions, and artifacts with the cache.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::Duration;

use client::approvals::{self, Decided};
use client::{Client, ClientError, Refused, Submitted};
use domain::approval::ApprovalStatus;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wire::event::Event;
use wire::request::SubmitMessage;

use crate::stack::{Stack, TOKEN};

fn message(text: &str) -> SubmitMessage {
    SubmitMessage {
        text: Some(text.to_owned()),
        attachments: Vec::new(),
    }
}

#[tokio::test]
async fn a_wrong_token_asks_to_connect_again_and_a_missing_scope_is_forbidden() {
    let stack = Stack::api("sessions.read").await;
    let base = stack.base.clone();
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
    let stack = Stack::api("sessions.read,sessions.write").await;
    let base = stack.base.clone();
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
    let served = testkit::serve(app).await;
    let client = Client::new(&served.url(""), TOKEN).expect("client");
    let error = client.sessions().await.expect_err("refused");
    assert!(matches!(error, ClientError::RepeatedCursor), "{error:?}");
}

#[tokio::test]
async fn a_second_message_attaches_to_the_active_run_and_queues_nothing() {
    let stack = Stack::api("sessions.read,sessions.write").await;
    let (base, db) = (stack.base.clone(), &stack.db);
    let client = Client::new(&base, TOKEN).expect("client");
    let session = new_session(&client).await;
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

/// A proxy on loopback to `upstream`: each of its first `special` connections goes to `handle`
/// with its index (client side first); later ones pass untouched.
async fn proxy<F, Fut>(upstream: String, special: usize, handle: F) -> String
where
    F: Fn(usize, TcpStream, TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("address"));
    let upstream = upstream.trim_start_matches("http://").to_owned();
    tokio::spawn(async move {
        for index in 0.. {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let mut server = TcpStream::connect(&upstream).await.expect("upstream");
            if index < special {
                tokio::spawn(handle(index, client, server));
            } else {
                tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
            }
        }
    });
    address
}

/// A proxy to `upstream` that lets the first request through but drops its answer, closing the
/// connection instead; later connections pass untouched.
async fn dropping_proxy(upstream: String) -> (String, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let address = proxy(upstream, 1, move |_, mut client, mut server| {
        let flag = flag.clone();
        async move {
            // Forward the request, wait for the answer to start, then hang up on the client.
            let mut buffer = vec![0u8; 64 * 1024];
            let read = client.read(&mut buffer).await.expect("request");
            server.write_all(&buffer[..read]).await.expect("forward");
            // Only once the server has answered is the answer lost.
            if server.read(&mut buffer).await.is_ok_and(|answered| answered > 0) {
                flag.store(true, Ordering::SeqCst);
            }
            drop(client);
        }
    })
    .await;
    (address, dropped)
}

#[tokio::test]
async fn a_retry_after_a_lost_answer_finds_the_run_the_first_attempt_made() {
    let stack = Stack::api("sessions.read,sessions.write").await;
    let (base, db) = (stack.base.clone(), &stack.db);
    let direct = Client::new(&base, TOKEN).expect("client");
    let session = new_session(&direct).await;
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

/// Copies at most `budget` bytes from `from` to `to`, stopping early when either side ends.
async fn forward_at_most(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    to: &mut (impl tokio::io::AsyncWrite + Unpin),
    budget: usize,
) {
    let mut left = budget;
    let mut buffer = vec![0u8; 8192];
    while left > 0 {
        let Ok(read) = from.read(&mut buffer).await else {
            return;
        };
        if read == 0 {
            return;
        }
        let take = read.min(left);
        if to.write_all(&buffer[..take]).await.is_err() {
            return;
        }
        left -= take;
    }
}

/// A proxy to `upstream` that cuts each of its first `cuts` connections after a pseudo-random
/// number of answer bytes (new points each run); later connections pass untouched. Counts the
/// connections it cut.
async fn cutting_proxy(upstream: String, cuts: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::AtomicUsize;
    let made = Arc::new(AtomicUsize::new(0));
    let count = made.clone();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_nanos() as u64
        | 1;
    let address = proxy(upstream, cuts, move |index, client, server| {
        count.fetch_add(1, Ordering::SeqCst);
        // xorshift: where this connection is cut, somewhere in its first 24 KiB.
        let mut x = seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let budget = 300 + (x % (24 * 1024)) as usize;
        async move {
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            });
            forward_at_most(&mut server_read, &mut client_write, budget).await;
            // Cut: both halves dropped here.
        }
    })
    .await;
    (address, made)
}

#[tokio::test]
async fn the_stream_through_random_cuts_yields_every_persisted_event_once_in_order() {
    const EVENTS: i64 = 300;
    let stack = Stack::api("sessions.read,sessions.write").await;
    let (base, db) = (stack.base.clone(), &stack.db);
    let direct = Client::new(&base, TOKEN).expect("client");
    let session = new_session(&direct).await;
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

/// Follows `follow` until `stop` picks an event out; every event seen before it is returned too.
async fn until<T>(follow: &mut client::Follow, mut stop: impl FnMut(&Event) -> Option<T>) -> (Vec<Event>, T) {
    let mut seen = Vec::new();
    loop {
        let update = tokio::time::timeout(Duration::from_secs(30), follow.next())
            .await
            .expect("the stream keeps moving")
            .expect("the stream goes on")
            .expect("no refusal");
        if let client::Update::Event(frame) = update {
            if let Some(found) = stop(&frame.event) {
                return (seen, found);
            }
            seen.push(frame.event);
        }
    }
}

#[tokio::test]
async fn a_cut_argument_is_proven_by_its_digest_and_a_tampered_one_is_refused() {
    let stack = Stack::with_worker("sessions.read,sessions.write").await;
    let client = stack.client();
    let session = new_session(&client).await;
    let long = "Oat milk, and a loaf of bread. ".repeat(25);
    assert!(long.chars().count() > 512);
    let text = format!("/tool notes.add {}", serde_json::json!({ "text": long }));
    let run = client.submit(session, &message(&text)).await.expect("submit").run_id();
    let mut follow = client.follow(session, 0, Some(run));
    let (before, requested) = until(&mut follow, |event| match event {
        Event::ApprovalRequested(requested) => Some(requested.clone()),
        _ => None,
    })
    .await;
    let proposed = before
        .iter()
        .find_map(|event| match event {
            Event::AssistantMessage(step) => step.tool_calls.first().map(|call| call.arguments.clone()),
            _ => None,
        })
        .expect("the model's proposed call");

    let pending = client.approvals(session).await.expect("pending approvals");
    assert_eq!(pending.len(), 1);
    let approval = &pending[0];
    assert_eq!(approval.approval_id, requested.approval_id);
    assert_eq!(
        approval.arguments["text"].as_str().map(|text| text.chars().count()),
        Some(512)
    );

    // Against the proposal: proven whole, so the whole text can be shown.
    let checked = approvals::check(&approval.arguments, &approval.argument_digests, Some(&proposed)).expect("proven");
    assert!(checked.whole);
    assert_eq!(checked.arguments["text"], long.as_str());
    // The proposal, as the SDK finds it in the stored events.
    assert_eq!(
        client.proposals(approval).await.expect("proposals"),
        vec![proposed.clone()]
    );
    assert!(
        approvals::check_against_proposals(
            &approval.arguments,
            &approval.argument_digests,
            std::slice::from_ref(&proposed)
        )
        .is_ok()
    );
    assert_eq!(
        approvals::check_against_proposals(&approval.arguments, &approval.argument_digests, &[]),
        Err(Refused::Unverifiable("/text".into()))
    );
    // Without it: every cut has its digest.
    let structural = approvals::check(&approval.arguments, &approval.argument_digests, None).expect("digested");
    assert_eq!(structural.cuts.keys().collect::<Vec<_>>(), ["/text"]);

    // Tampered: the text shown differs from the text proposed, the digest kept.
    let mut tampered = approval.arguments.clone();
    tampered["text"] = serde_json::Value::String(format!("X{}", &long[1..512]));
    assert_eq!(
        approvals::check(&tampered, &approval.argument_digests, Some(&proposed)),
        Err(Refused::Mismatch("/text".into()))
    );
    // Tampered: the digest removed.
    assert_eq!(
        approvals::check(&approval.arguments, &Default::default(), None),
        Err(Refused::CutWithoutDigest("/text".into()))
    );

    let decided = client
        .approve_once(approval.approval_id, &checked)
        .await
        .expect("decide");
    let Decided::Decided(stored) = decided else {
        panic!("the first decision is stored: {decided:?}");
    };
    assert_eq!(stored.status, ApprovalStatus::Approved);
    // The first stored resolution wins over a later one.
    assert_eq!(
        client.deny(approval.approval_id).await.expect("answered"),
        Decided::AlreadyResolved(ApprovalStatus::Approved)
    );
    let (_, ended) = until(&mut follow, |event| event.ends_run().then(|| event.clone())).await;
    assert!(matches!(ended, Event::RunCompleted(_)), "{ended:?}");
}

#[tokio::test]
async fn a_question_is_answered_with_its_displayed_id() {
    let stack = Stack::with_worker("sessions.read,sessions.write").await;
    let client = stack.client();
    let session = new_session(&client).await;
    let run = client
        .submit(session, &message("/ask Which colour?"))
        .await
        .expect("submit")
        .run_id();
    let mut follow = client.follow(session, 0, Some(run));
    let (_, question) = until(&mut follow, |event| match event {
        Event::QuestionAsked(question) => Some(question.clone()),
        _ => None,
    })
    .await;
    assert_eq!(question.text, "Which colour?");
    let error = client
        .answer(run, uuid::Uuid::new_v4(), "Teal")
        .await
        .expect_err("not the displayed question");
    assert_eq!(error.code(), Some("question_not_pending"));
    client
        .answer(run, question.question_id, "Teal")
        .await
        .expect("answered");
    let (seen, ended) = until(&mut follow, |event| event.ends_run().then(|| event.clone())).await;
    assert!(matches!(ended, Event::RunCompleted(_)), "{ended:?}");
    assert!(
        seen.iter()
            .any(|event| matches!(event, Event::QuestionAnswered(answered) if answered.answer == "Teal"))
    );
}

/// A proxy to `upstream` whose first connection is cut after `bytes` of the request; later
/// connections pass untouched.
async fn upload_cutting_proxy(upstream: String, bytes: usize) -> String {
    proxy(upstream, 1, move |_, mut client, mut server| async move {
        forward_at_most(&mut client, &mut server, bytes).await;
        // Cut: both ends dropped mid-request.
    })
    .await
}

#[tokio::test]
async fn an_upload_cut_midway_is_retried_and_a_download_is_revalidated_from_the_cache() {
    let stack = Stack::api("sessions.read,sessions.write").await;
    let direct = stack.client();
    let session = new_session(&direct).await;
    let proxy = upload_cutting_proxy(stack.base.clone(), 100 * 1024).await;
    let through = Client::new(&proxy, TOKEN).expect("client");
    let bytes: Vec<u8> = (0..300 * 1024).map(|n| (n % 251) as u8).collect();
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = reports.clone();
    let progress: client::Progress = Arc::new(move |done, total| seen.lock().expect("lock").push((done, total)));
    let artifact = through
        .upload(
            session,
            "data.bin",
            "application/octet-stream",
            bytes.clone().into(),
            Some(progress),
        )
        .await
        .expect("uploaded on a retry");
    assert_eq!(artifact.size_bytes, 300 * 1024);
    let reports = reports.lock().expect("lock").clone();
    assert_eq!(reports.last(), Some(&(300 * 1024, Some(300 * 1024))));
    assert!(
        reports.windows(2).any(|pair| pair[1].0 < pair[0].0),
        "progress started again for the retry"
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE session_id = $1")
        .bind(session)
        .fetch_one(&stack.db.pool)
        .await
        .expect("count");
    assert_eq!(stored, 1, "the cut attempt stored nothing");

    let first = direct
        .download(session, artifact.artifact_id, None)
        .await
        .expect("download");
    assert_eq!(first.bytes.as_ref(), bytes.as_slice());
    assert!(!first.from_cache);
    assert_eq!(first.etag, artifact.etag);
    assert_eq!(direct.cached_bytes(), bytes.len());
    let second = direct
        .download(session, artifact.artifact_id, None)
        .await
        .expect("revalidate");
    assert!(second.from_cache, "304: the cached bytes are reused");
    assert_eq!(second.bytes, first.bytes);
    direct.clear_cache();
    assert_eq!(direct.cached_bytes(), 0);
}

/// A new conversation with the default agent.
async fn new_session(client: &Client) -> uuid::Uuid {
    client
        .create_session("default", None)
        .await
        .expect("create")
        .summary
        .session_id
}
