//! The event stream: replay after Last-Event-ID, live events, closing after the run ends.

use reqwest::Method;
use serde_json::json;

use crate::support::{Frame, SseReader, TestApp, expect_problem, json};

/// xorshift64*, seeded per run and printed, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
    }
}

/// Some event of the run, numbered `n`.
fn tick(run: domain::ids::RunId, n: i64) -> wire::event::Event {
    wire::event::Event::QuestionAnswered(wire::event::QuestionAnswered {
        run_id: run.as_uuid(),
        question_id: uuid::Uuid::nil(),
        answer: n.to_string(),
    })
}

/// A fresh session with a run started by a message: their ids as the API spells them
/// (session, run) and typed (run, session).
pub(crate) type Started = (String, String, domain::ids::RunId, domain::ids::SessionId);

pub(crate) async fn started(app: &TestApp, key: &str, text: &str) -> Started {
    let session = app.new_session().await;
    let (_, accepted) = json(app.submit(&session, key, json!({ "text": text })).await).await;
    let run = accepted["run"]["run_id"].as_str().expect("id").to_owned();
    let run_id = domain::ids::RunId::parse(&run).expect("run id");
    let session_id = domain::ids::SessionId::parse(&session).expect("session id");
    (session, run, run_id, session_id)
}

/// Cancels `run` as the owner does.
pub(crate) async fn cancel(app: &TestApp, run: &str) {
    let cancelled = app.send(Method::POST, &format!("/v1/runs/{run}/cancel")).await;
    assert_eq!(cancelled.status(), 200);
}

/// The stream's next frame (`None` once it closed), which must come within `seconds`.
async fn within(reader: &mut SseReader, seconds: u64, what: &str) -> Option<Frame> {
    tokio::time::timeout(std::time::Duration::from_secs(seconds), reader.next())
        .await
        .unwrap_or_else(|_| panic!("{what} within {seconds} s"))
}

#[tokio::test]
async fn reconnecting_at_random_points_loses_and_repeats_nothing() {
    let app = TestApp::spawn().await;
    let (session, run, run_id, session_id) = started(&app, "s-1", "stream please").await;

    const TOTAL: i64 = 1000;
    // Events keep arriving while the client reads, drops and reconnects.
    let store = app.store();
    let producer = tokio::spawn(async move {
        for n in 2..=TOTAL {
            store
                .append_event(session_id, Some(run_id), &tick(run_id, n))
                .await
                .expect("append");
            if n % 50 == 0 {
                tokio::task::yield_now().await;
            }
        }
    });

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    println!("drop-point seed: {seed}");
    let mut rng = Rng(seed);
    let mut drops = std::collections::BTreeSet::new();
    while drops.len() < 100 {
        drops.insert(1 + rng.next(TOTAL as u64 - 1) as i64);
    }

    let mut seen: Vec<i64> = Vec::new();
    let mut reconnects = 0;
    let mut reader = app.events(&session, None).await;
    loop {
        let Some(frame) = reader.next().await else {
            // Closed by the server: only once the run has ended and everything was delivered.
            break;
        };
        let id = frame.id.expect("persisted events carry their sequence");
        seen.push(id);
        if id == TOTAL {
            cancel(&app, &run).await;
        }
        if drops.remove(&id) {
            drop(reader);
            reconnects += 1;
            reader = app.events(&session, Some(id)).await;
        }
    }
    producer.await.expect("producer");
    assert_eq!(reconnects, 100);
    let expected: Vec<i64> = (1..=TOTAL + 1).collect();
    assert_eq!(seen, expected, "no gap and no duplicate (seed {seed})");
}

#[tokio::test]
async fn a_replay_of_several_pages_sends_every_stored_event_as_its_typed_frame_and_closes_after_the_run() {
    let app = TestApp::spawn().await;
    let (session, run, run_id, session_id) = started(&app, "p-1", "a long one").await;
    // More than the first page of the stream's reads (the next one is sized from it), stored before it opens.
    const TOTAL: i64 = 2_500;
    let store = app.store();
    for n in 2..=TOTAL {
        store
            .append_event(session_id, Some(run_id), &tick(run_id, n))
            .await
            .expect("append");
    }
    cancel(&app, &run).await;

    let principal = domain::ids::PrincipalId::owner();
    let stored = store
        .events_after(&principal, session_id, 0, 10_000)
        .await
        .expect("stored events");
    assert_eq!(stored.len(), TOTAL as usize + 1);
    let mut reader = app.events(&session, None).await;
    let mut replayed = Vec::new();
    while let Some(frame) = within(&mut reader, 10, "the replay goes on until it closes").await {
        let parsed: wire::event::Frame = serde_json::from_str(&frame.data).expect("a frame");
        assert_eq!(frame.id, Some(parsed.seq));
        assert_eq!(frame.event.as_deref(), Some(parsed.event.kind()));
        replayed.push(parsed);
    }
    // Every stored event in order, each exactly the typed frame, and the stream closed right
    // after the run's terminal event.
    let expected: Vec<wire::event::Frame> = stored.into_iter().map(store::EventRow::into_frame).collect();
    assert_eq!(replayed.len(), expected.len());
    assert_eq!(replayed, expected);
    assert_eq!(replayed.last().map(|frame| frame.event.kind()), Some("run.cancelled"));
}

#[tokio::test]
async fn a_stream_follows_the_live_run_and_closes_on_its_terminal_event() {
    let app = TestApp::spawn().await;
    let session = app.new_session().await;
    let (_, accepted) = json(app.submit(&session, "l-1", json!({ "text": "hi" })).await).await;
    let run = accepted["run"]["run_id"].as_str().expect("id").to_owned();

    let response = app
        .request(Method::GET, &format!("/v1/sessions/{session}/events"))
        .send()
        .await
        .expect("send");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let mut reader = crate::support::SseReader::new(response);
    let first = reader.next().await.expect("message event");
    assert_eq!(
        (first.id, first.event.as_deref()),
        (Some(1), Some("user.message.created"))
    );
    let data: serde_json::Value = serde_json::from_str(&first.data).expect("json data");
    assert_eq!(data["run_id"], run.as_str());
    assert_eq!(data["payload"]["message"]["text"], "hi");

    // The stream is live: a cancel arrives as the next frame, then the stream ends.
    cancel(&app, &run).await;
    let terminal = within(&mut reader, 5, "live delivery").await.expect("cancel event");
    assert_eq!(
        (terminal.id, terminal.event.as_deref()),
        (Some(2), Some("run.cancelled"))
    );
    let data: serde_json::Value = serde_json::from_str(&terminal.data).expect("json data");
    assert_eq!(data["payload"]["reason"], "requested");
    assert!(within(&mut reader, 5, "closes").await.is_none());

    // Replaying up to a run's terminal event closes after it.
    let mut replay = app.events(&session, Some(1)).await;
    assert_eq!(replay.next().await.and_then(|frame| frame.id), Some(2));
    assert!(replay.next().await.is_none());

    // A stream on an idle session with nothing new stays open for the next run.
    let mut idle = app.events(&session, Some(2)).await;
    let waited = tokio::time::timeout(std::time::Duration::from_millis(700), idle.next()).await;
    assert!(waited.is_err(), "the idle stream stayed open");
    let (_, next) = json(app.submit(&session, "l-2", json!({ "text": "again" })).await).await;
    let frame = within(&mut idle, 5, "live").await.expect("frame");
    assert_eq!(
        (frame.id, frame.event.as_deref()),
        (Some(3), Some("user.message.created"))
    );
    let next_run = next["run"]["run_id"].as_str().expect("id").to_owned();
    cancel(&app, &next_run).await;
    let frame = within(&mut idle, 5, "live").await.expect("frame");
    assert_eq!(frame.event.as_deref(), Some("run.cancelled"));
    assert!(within(&mut idle, 5, "closes").await.is_none());
}

#[tokio::test]
async fn a_deleted_session_ends_its_idle_stream() {
    let app = TestApp::spawn().await;
    let session = app.new_session().await;
    let mut idle = app.events(&session, None).await;
    assert_eq!(
        app.request(Method::DELETE, &format!("/v1/sessions/{session}"))
            .send()
            .await
            .expect("send")
            .status(),
        204
    );
    // Woken by the periodic re-read at the latest.
    assert!(within(&mut idle, 20, "closes").await.is_none());
}

#[tokio::test]
async fn stream_requests_are_checked() {
    let app = TestApp::spawn().await;
    let unknown = format!("/v1/sessions/{}/events", uuid::Uuid::new_v4());
    expect_problem(app.send(Method::GET, &unknown).await, 404, "session_not_found").await;
    let session = app.new_session().await;
    // Only digits name an event: a sign is refused too, even on 0.
    for value in ["yesterday", "-1", "-0", "+5", ""] {
        let bad = app
            .request(Method::GET, &format!("/v1/sessions/{session}/events"))
            .header("last-event-id", value)
            .send()
            .await
            .expect("send");
        expect_problem(bad, 400, "invalid_request").await;
    }
}

#[tokio::test]
async fn an_idle_stream_carries_heartbeat_comments() {
    let app = TestApp::spawn_with(crate::support::Env::default().set("API_STREAM_HEARTBEAT_SECONDS", "1")).await;
    let session = app.new_session().await;
    let mut response = app
        .request(Method::GET, &format!("/v1/sessions/{session}/events"))
        .send()
        .await
        .expect("send");
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !seen.contains(": heartbeat\n") {
        assert!(
            std::time::Instant::now() < deadline,
            "no heartbeat within 5 s: {seen:?}"
        );
        if let Ok(Ok(Some(chunk))) = tokio::time::timeout(std::time::Duration::from_secs(5), response.chunk()).await {
            seen.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }
}

#[tokio::test]
async fn with_every_wake_up_lost_a_stream_still_delivers_every_event_within_its_heartbeat() {
    let app = TestApp::spawn_deaf(crate::support::Env::default().set("API_STREAM_HEARTBEAT_SECONDS", "1")).await;
    let mut guard = app.db.wake_guard().await;
    let (session, run, run_id, session_id) = started(&app, "deaf-1", "quietly").await;
    let mut reader = app.events(&session, None).await;
    assert_eq!(reader.next().await.expect("the message").id, Some(1));

    // Bursts committed by a store that hints nothing, while the stream waits.
    let producer = app.store().without_wakes();
    let mut next = 2;
    for _ in 0..3 {
        for n in next..next + 100 {
            producer
                .append_event(session_id, Some(run_id), &tick(run_id, n))
                .await
                .expect("append");
        }
        let committed = std::time::Instant::now();
        for n in next..next + 100 {
            let frame = within(&mut reader, 5, "delivered by the re-read")
                .await
                .expect("a frame");
            assert_eq!(frame.id, Some(n), "in order, none lost");
        }
        assert!(
            committed.elapsed() < std::time::Duration::from_millis(2500),
            "within the one-second re-read interval: {:?}",
            committed.elapsed()
        );
        next += 100;
    }
    cancel(&app, &run).await;
    let last = within(&mut reader, 5, "the cancellation is delivered")
        .await
        .expect("a frame");
    assert_eq!((last.id, last.event.as_deref()), (Some(next), Some("run.cancelled")));
    assert!(
        within(&mut reader, 5, "the stream closes after the run ends")
            .await
            .is_none()
    );
    testkit::assert_no_wake_up(&mut guard).await;
}

#[tokio::test]
async fn committed_work_wakes_other_processes_with_coalesced_notifications_after_commit() {
    let app = TestApp::spawn().await;
    let mut guard = app.db.wake_guard().await;
    let mut sessions = Vec::new();
    for _ in 0..8 {
        sessions.push(domain::ids::SessionId::parse(&app.new_session().await).expect("id"));
    }
    // Another process's store: its notifications carry its origin, not the app's.
    let producer = app.store();
    const PER_SESSION: i64 = 25;
    let started = std::time::Instant::now();
    let writers: Vec<_> = sessions
        .iter()
        .map(|session| {
            let (store, session) = (producer.clone(), *session);
            tokio::spawn(async move {
                for n in 1..=PER_SESSION {
                    let event = wire::event::Event::QuestionAnswered(wire::event::QuestionAnswered {
                        run_id: uuid::Uuid::nil(),
                        question_id: uuid::Uuid::nil(),
                        answer: n.to_string(),
                    });
                    store.append_event(session, None, &event).await.expect("append");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer");
    }
    let elapsed = started.elapsed();
    let mut latest: std::collections::HashMap<domain::ids::SessionId, i64> = std::collections::HashMap::new();
    let mut notifications = 0;
    while latest.len() < sessions.len() || latest.values().any(|seq| *seq < PER_SESSION) {
        let notification = tokio::time::timeout(std::time::Duration::from_secs(5), guard.recv())
            .await
            .expect("every session's last event is announced")
            .expect("a notification");
        let (origin, hints) = store::parse_wake_payload(notification.payload()).expect("a wake-up payload");
        if origin != producer.wake_origin() {
            continue;
        }
        assert_eq!(notification.channel(), store::EVENTS_CHANNEL);
        notifications += 1;
        for hint in hints {
            let store::Hint::Event(session, seq) = hint else {
                panic!("only events were committed: {hint:?}");
            };
            let known = latest.entry(session).or_default();
            assert!(seq > *known, "announced in order");
            *known = seq;
        }
    }
    let commits = sessions.len() as u128 * PER_SESSION as u128;
    let allowed = elapsed.as_millis() / store::WAKE_SPACING.as_millis() + 2;
    assert!(
        notifications as u128 <= allowed && notifications as u128 * 2 <= commits,
        "{notifications} notifications for {commits} commits in {elapsed:?}: at most one per {:?}",
        store::WAKE_SPACING
    );
}
