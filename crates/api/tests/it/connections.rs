//! Hostile clients cannot hoard connections: half-sent heads and idle keep-alive connections
//! are closed after the header timeout, the connection cap holds the next ones back instead of
//! running out of file descriptors, and a client that stops reading its event stream is cut off
//! once its writes stall, losing nothing it reconnects for.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stream::{cancel, started};
use crate::support::{Env, TestApp};

fn address(app: &TestApp) -> SocketAddr {
    app.base
        .trim_start_matches("http://")
        .parse()
        .expect("the app's address")
}

/// Reads until the server closes the connection (or resets it); what was read. Fails the test
/// if the connection is still open after `within`.
async fn until_closed(connection: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut read = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, connection.read(&mut chunk)).await {
            Err(_) => panic!("the connection is still open after {within:?}"),
            Ok(Ok(0) | Err(_)) => return read,
            Ok(Ok(length)) => read.extend_from_slice(&chunk[..length]),
        }
    }
}

#[tokio::test]
async fn half_sent_heads_and_idle_keep_alive_connections_are_closed_while_the_owner_is_answered() {
    let app = TestApp::spawn_with(Env::default().set("API_HEADER_TIMEOUT_SECONDS", "1")).await;
    let mut hoarded = Vec::new();
    for _ in 0..50 {
        let mut connection = TcpStream::connect(address(&app)).await.expect("connect");
        connection
            .write_all(b"GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .expect("half a head");
        hoarded.push(connection);
    }
    // A kept-alive connection that has had its answer and then says nothing.
    let mut idle = TcpStream::connect(address(&app)).await.expect("connect");
    idle.write_all(b"GET /health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("a whole request");
    let mut head = [0u8; 12];
    idle.read_exact(&mut head).await.expect("the answer");
    assert_eq!(&head[9..12], b"200");

    // The owner is answered while they wait.
    let sessions = app.send(Method::GET, "/v1/sessions").await;
    assert_eq!(sessions.status(), 200);

    for connection in &mut hoarded {
        let answer = until_closed(connection, Duration::from_secs(10)).await;
        assert!(
            answer.is_empty() || answer.starts_with(b"HTTP/1.1 408"),
            "closed without serving the half head"
        );
    }
    until_closed(&mut idle, Duration::from_secs(10)).await;
    let sessions = app.send(Method::GET, "/v1/sessions").await;
    assert_eq!(sessions.status(), 200);
}

#[tokio::test]
async fn at_the_connection_cap_the_next_connection_waits_for_a_free_one() {
    let app = TestApp::spawn_with(
        Env::default()
            .set("API_MAX_CONNECTIONS", "3")
            .set("API_HEADER_TIMEOUT_SECONDS", "60"),
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(address(&app)).await.expect("connect"));
    }
    // The kernel completes the handshake (the backlog), but the server does not take the
    // connection, so the request is not answered while the three are held.
    let waiting = tokio::spawn({
        let (client, url, token) = (app.client.clone(), app.url("/v1/sessions"), app.token.clone());
        async move {
            client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .map(|response| response.status())
        }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!waiting.is_finished(), "answered beyond the cap");
    drop(held.pop());
    let status = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("answered once a connection closed")
        .expect("task")
        .expect("send");
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_stream_client_that_stops_reading_is_cut_off_and_resumes_without_loss() {
    let app = TestApp::spawn_with(Env::default().set("API_STALL_TIMEOUT_SECONDS", "1")).await;
    let (session, run, run_id, session_id) = started(&app, "stall-1", "a long answer").await;

    // A client with a small receive buffer that asks for the stream and then reads nothing.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer");
    let mut stalled = socket.connect(address(&app)).await.expect("connect");
    let request = format!(
        "GET /v1/sessions/{session}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n",
        app.token
    );
    stalled.write_all(request.as_bytes()).await.expect("request");

    // Far more than the socket buffers hold: 400 events of 32 KiB.
    const EVENTS: i64 = 400;
    let answer = "x".repeat(32 * 1024);
    let store = app.store();
    for n in 2..=EVENTS + 1 {
        let event = wire::event::Event::QuestionAnswered(wire::event::QuestionAnswered {
            run_id: run_id.as_uuid(),
            question_id: uuid::Uuid::nil(),
            answer: format!("{n} {answer}"),
        });
        store
            .append_event(session_id, Some(run_id), &event)
            .await
            .expect("append");
    }
    cancel(&app, &run).await;

    // Once its writes stall past the limit the server closes the connection: reading now gets
    // what was buffered and then the end, well short of the whole stream.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let received = until_closed(&mut stalled, Duration::from_secs(20)).await;
    let whole = usize::try_from(EVENTS).expect("count") * answer.len();
    assert!(
        received.len() < whole / 2,
        "cut off: {} of {whole} bytes",
        received.len()
    );

    // Every frame that arrived whole is one the client has; it resumes after the last.
    let text = String::from_utf8_lossy(&received);
    let whole_frames = &text[..text.rfind("\n\n").map_or(0, |end| end + 2)];
    let last = whole_frames
        .split("\n\n")
        .filter(|frame| frame.contains("\ndata: "))
        .filter_map(|frame| {
            frame
                .lines()
                .find_map(|line| line.strip_prefix("id: "))
                .and_then(|id| id.parse::<i64>().ok())
        })
        .max()
        .expect("some whole frames arrived before the stall");
    let mut resumed = app.events(&session, Some(last)).await;
    let mut next = last + 1;
    while let Some(frame) = resumed.next().await {
        assert_eq!(frame.id, Some(next), "nothing lost, nothing repeated");
        next += 1;
    }
    assert_eq!(
        next,
        EVENTS + 3,
        "through the run's end (the message, the answers, the cancel)"
    );
}
