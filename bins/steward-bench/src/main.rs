//! Load generator for `cargo xtask bench`, which starts the servers and the references; each
//! subcommand measures one thing over loopback and prints its figures as one JSON object.
//!
//! - `submits BASE TOKEN_FILE SAMPLES SESSIONS CLIENTS`: submit → first persisted event on the
//!   session's stream (sequential samples), then message submits per second, one into each of
//!   `SESSIONS` fresh sessions, `CLIENTS` at a time.
//! - `events BASE TOKEN_FILE STREAMS SECONDS`: `STREAMS` sessions each with a live stream, each
//!   submitting a message about once a second while the worker answers it; the latency of every
//!   persisted frame from its event's time (`created_at`, stamped in the writing transaction) to
//!   its arrival here, and of every model delta whose text holds send times (those of `model`,
//!   each the microseconds since the Unix epoch when the model sent it) to its arrival here.
//!   With `MODEL_BASE` (the `model` server's address) as a fifth argument, also the time from
//!   each submit's answer to the model server receiving the request it caused.
//! - `model PORT_FILE`: not a measurement but a model server for `events`: OpenAI-compatible
//!   streamed Chat Completions whose every content piece is the time it is sent, 20 pieces 50 ms
//!   apart per answer; `GET /arrivals` lists when each user message first arrived in a request
//!   (microseconds since the Unix epoch, by the message's text). It writes its port to
//!   `PORT_FILE` and serves until killed.
//! - `direct MODEL_BASE STREAMS SECONDS`: the reference of the token row: `STREAMS` clients
//!   reading answers straight from the `model` server, each piece's arrival minus its send time.
//! - `idle BASE TOKEN_FILE STREAMS PID HOLD_SECONDS`: opens `STREAMS` streams on as many idle
//!   sessions, holds them, and reads the resident memory of the API process `PID`.
//! - `rss PID`: the resident memory of process `PID` (`rss_kib`), for the rows that measure a
//!   role at rest.
//! - `replay BASE TOKEN_FILE SESSION LAST`: the time to receive a session's events from
//!   `Last-Event-ID: 0` through `LAST`.
//! - `floor PORT_FILE`: not a measurement but a reference server: bare axum on the API's HTTP
//!   stack, answering session creation and holding every event stream open without a database,
//!   authentication or state, so `idle` against it measures what an idle stream costs before
//!   Steward's own work. It writes its port to `PORT_FILE` and serves until killed.
//! - `langgraph BASE ASSISTANT RUNS CLIENTS`: background runs per second on a LangGraph API
//!   server (`POST /threads/{id}/runs`, one run into each of `RUNS` fresh threads).
//! - `inbox` and `refresh`: Email mode's budgets (see `email.rs`).
//! - `soak BASE TOKEN_FILE SECONDS DEMO_MAIL_DIR`: not a measurement but the day-shaped load of
//!   `cargo xtask soak` (see `soak.rs`).
//! - `apns DIR`: not a measurement but the push provider stand-in of `cargo xtask soak` (see
//!   `apns.rs`).

mod apns;
mod email;
mod soak;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};

struct Api {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Api {
    fn new(base: &str, token_file: &str, connections: usize) -> anyhow::Result<Arc<Self>> {
        let token = std::fs::read_to_string(token_file)
            .context("read the token file")?
            .trim()
            .to_owned();
        Ok(Arc::new(Self {
            base: base.trim_end_matches('/').to_owned(),
            token,
            client: reqwest::Client::builder().pool_max_idle_per_host(connections).build()?,
        }))
    }

    async fn session(&self) -> anyhow::Result<String> {
        let response = self
            .client
            .post(format!("{}/v1/sessions", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "agent_id": "default" }))
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("creating a session answered {}", response.status());
        }
        let body: Value = response.json().await?;
        body["session_id"].as_str().map(str::to_owned).context("session id")
    }

    /// `count` fresh sessions, created `clients` at a time.
    async fn sessions(self: &Arc<Self>, count: usize, clients: usize) -> anyhow::Result<Vec<String>> {
        futures_util::stream::iter(0..count)
            .map(|_| {
                let api = self.clone();
                async move { api.session().await }
            })
            .buffer_unordered(clients)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect()
    }

    async fn submit(&self, session: &str, key: &str) -> anyhow::Result<()> {
        let response = self
            .client
            .post(format!("{}/v1/sessions/{session}/messages", self.base))
            .bearer_auth(&self.token)
            .header("idempotency-key", key)
            // The key in the text: the model server of `events` notes when each message first
            // reaches it.
            .json(&json!({ "text": format!("benchmark message {key}") }))
            .send()
            .await?;
        if response.status().as_u16() != 202 {
            bail!("submit answered {}", response.status());
        }
        Ok(())
    }

    /// Opens a session's event stream after sequence `after`.
    async fn stream(&self, session: &str, after: i64) -> anyhow::Result<reqwest::Response> {
        let response = self
            .client
            .get(format!("{}/v1/sessions/{session}/events", self.base))
            .bearer_auth(&self.token)
            .header("last-event-id", after.to_string())
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("opening the stream answered {}", response.status());
        }
        Ok(response)
    }
}

/// One frame of a server-sent event stream.
struct Frame {
    id: Option<i64>,
    event: String,
    data: String,
}

/// Splits a byte stream into frames as chunks arrive.
#[derive(Default)]
struct Frames {
    buffer: Vec<u8>,
}

impl Frames {
    fn push(&mut self, chunk: &[u8]) -> Vec<Frame> {
        self.buffer.extend_from_slice(chunk);
        let mut frames = Vec::new();
        while let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
            let raw: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&raw);
            let mut frame = Frame {
                id: None,
                event: String::new(),
                data: String::new(),
            };
            for line in text.lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    frame.id = id.trim().parse().ok();
                } else if let Some(event) = line.strip_prefix("event:") {
                    frame.event = event.trim().to_owned();
                } else if let Some(data) = line.strip_prefix("data:") {
                    frame.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                }
            }
            frames.push(frame);
        }
        frames
    }
}

/// A system-wide `perf record` of the throughput phase alone, into the file named by
/// `STEWARD_BENCH_PERF` (set by `cargo xtask bench --perf DIR`); stopped when dropped.
struct Profile(std::process::Child);

impl Profile {
    async fn start() -> Option<Profile> {
        let data = std::env::var_os("STEWARD_BENCH_PERF")?;
        let child = std::process::Command::new("perf")
            .args(["record", "-a", "-g", "-F", "299", "-q", "-o"])
            .arg(data)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        // perf needs a moment before it samples.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Some(Profile(child))
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn number(args: &[String], index: usize, what: &str) -> anyhow::Result<usize> {
    args.get(index)
        .with_context(|| format!("missing {what}"))?
        .parse()
        .with_context(|| format!("{what} is not a number"))
}

/// Resident set size of a process, from /proc.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        line.strip_prefix("VmRSS:")?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("submits") => submits(&args[1..]).await?,
        Some("events") => events(&args[1..]).await?,
        Some("idle") => idle(&args[1..]).await?,
        Some("replay") => replay(&args[1..]).await?,
        Some("langgraph") => langgraph(&args[1..]).await?,
        Some("floor") => floor(&args[1..]).await?,
        Some("model") => model(&args[1..]).await?,
        Some("direct") => direct(&args[1..]).await?,
        Some("rss") => {
            let pid: u32 = number(&args, 1, "pid")?.try_into()?;
            json!({ "rss_kib": rss_kib(pid).context("read the process's resident memory")? })
        }
        Some("inbox") => email::inbox(&args[1..]).await?,
        Some("refresh") => email::refresh(&args[1..]).await?,
        Some("soak") => soak::soak(&args[1..]).await?,
        Some("apns") => apns::apns(&args[1..]).await?,
        _ => bail!(
            "usage: steward-bench submits|events|idle|rss|replay|langgraph|floor|model|direct|inbox|refresh|soak|apns ARGS (see the source's header)"
        ),
    };
    println!("{result}");
    Ok(())
}

async fn submits(args: &[String]) -> anyhow::Result<Value> {
    let (samples, sessions, clients) = (
        number(args, 2, "samples")?,
        number(args, 3, "sessions")?,
        number(args, 4, "clients")?,
    );
    let api = Api::new(&args[0], &args[1], clients)?;

    // Latency: submit → first persisted event on the session's stream, one at a time.
    let mut latencies = Vec::with_capacity(samples);
    for sample in 0..samples {
        let session = api.session().await?;
        let started = Instant::now();
        api.submit(&session, &format!("latency-{sample}")).await?;
        let mut stream = api.stream(&session, 0).await?.bytes_stream();
        let mut frames = Frames::default();
        'read: loop {
            let chunk = stream
                .next()
                .await
                .context("the stream ended without the first event")??;
            if frames.push(&chunk).iter().any(|frame| frame.id == Some(1)) {
                break 'read;
            }
        }
        latencies.push(started.elapsed());
    }
    latencies.sort();

    // Throughput: one message into each of `sessions` fresh sessions, `clients` at a time.
    let ids = api.sessions(sessions, clients).await?;
    let profile = Profile::start().await;
    let started = Instant::now();
    let results: Vec<anyhow::Result<()>> = futures_util::stream::iter(ids.into_iter().enumerate())
        .map(|(index, session)| {
            let api = api.clone();
            async move { api.submit(&session, &format!("throughput-{index}")).await }
        })
        .buffer_unordered(clients)
        .collect()
        .await;
    let elapsed = started.elapsed();
    drop(profile);
    let failures = results.iter().filter(|result| result.is_err()).count();
    if failures > 0 {
        bail!("{failures} submits failed");
    }
    Ok(json!({
        "first_event_p50_ms": ms(percentile(&latencies, 0.50)),
        "first_event_p99_ms": ms(percentile(&latencies, 0.99)),
        "submits_per_second": sessions as f64 / elapsed.as_secs_f64(),
    }))
}

async fn events(args: &[String]) -> anyhow::Result<Value> {
    let (streams, seconds) = (number(args, 2, "streams")?, number(args, 3, "seconds")?);
    let api = Api::new(&args[0], &args[1], streams)?;
    let sessions = api.sessions(streams, 32).await?;
    let model_base = args.get(4).cloned();
    let until = Instant::now() + Duration::from_secs(seconds as u64);
    let tasks: Vec<_> = sessions
        .into_iter()
        .enumerate()
        .map(|(index, session)| {
            let api = api.clone();
            tokio::spawn(async move { converse(&api, &session, index, until).await })
        })
        .collect();
    let (mut latencies, mut deltas) = (Vec::new(), Vec::new());
    let mut runs = 0;
    let mut answered = std::collections::HashMap::new();
    for task in tasks {
        let heard = task.await??;
        latencies.extend(heard.persisted);
        deltas.extend(heard.deltas);
        runs += heard.runs;
        answered.extend(heard.answered);
    }
    latencies.sort();
    deltas.sort();
    // Submit answered → the model server receiving the request that message caused.
    let mut requests = Vec::new();
    if let Some(model) = model_base {
        let arrivals: std::collections::HashMap<String, u128> = reqwest::get(format!("{model}/arrivals"))
            .await?
            .json()
            .await
            .context("the model server's arrivals")?;
        for (text, answered) in &answered {
            if let Some(arrived) = arrivals.get(text) {
                // A request may reach the model before the submit's answer reaches the client.
                requests.push(Duration::from_micros(
                    u64::try_from(arrived.saturating_sub(*answered)).unwrap_or(0),
                ));
            }
        }
        requests.sort();
    }
    Ok(json!({
        "model_requests": requests.len(),
        "model_request_p50_ms": ms(percentile(&requests, 0.50)),
        "model_request_p99_ms": ms(percentile(&requests, 0.99)),
        "streams": streams,
        "runs": runs,
        "frames": latencies.len(),
        "p50_ms": ms(percentile(&latencies, 0.50)),
        "p99_ms": ms(percentile(&latencies, 0.99)),
        "max_ms": ms(latencies.last().copied().unwrap_or_default()),
        "deltas": deltas.len(),
        "delta_p50_ms": ms(percentile(&deltas, 0.50)),
        "delta_p99_ms": ms(percentile(&deltas, 0.99)),
    }))
}

/// What one session's conversation heard.
struct Heard {
    /// Each persisted frame's latency from its event's time.
    persisted: Vec<Duration>,
    /// Each model delta's latency from its send time (only when the model stamps them).
    deltas: Vec<Duration>,
    runs: usize,
    /// When each submit was answered (microseconds since the Unix epoch), by its message's text.
    answered: Vec<(String, u128)>,
}

/// Microseconds since the Unix epoch.
fn now_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros())
}

/// One session's conversation: its stream open, a message about once a second, each run
/// followed to its end (the stream closes after a run's terminal event, and is reopened where
/// it stopped). Returns every persisted frame's latency, every stamped delta's, and the number
/// of runs.
async fn converse(api: &Api, session: &str, index: usize, until: Instant) -> anyhow::Result<Heard> {
    // Spread the sessions' first messages over the first second.
    tokio::time::sleep(Duration::from_millis((index as u64 * 7919) % 1000)).await;
    let (mut latencies, mut deltas, mut last, mut runs) = (Vec::new(), Vec::new(), 0_i64, 0);
    let mut answered = Vec::new();
    while Instant::now() < until {
        let started = Instant::now();
        let mut stream = api.stream(session, last).await?.bytes_stream();
        let key = format!("events-{session}-{runs}");
        api.submit(session, &key).await?;
        answered.push((format!("benchmark message {key}"), now_micros()));
        let mut frames = Frames::default();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            let arrived = jiff::Timestamp::now();
            for frame in frames.push(&chunk) {
                let Some(id) = frame.id else {
                    if frame.event == "assistant.delta" {
                        let now = now_micros();
                        let data: Value = serde_json::from_str(&frame.data).context("a delta's data is not JSON")?;
                        for stamp in data["text"].as_str().unwrap_or_default().split_whitespace() {
                            if let Ok(sent) = stamp.parse::<u128>() {
                                let micros = u64::try_from(now.saturating_sub(sent)).unwrap_or(u64::MAX);
                                deltas.push(Duration::from_micros(micros));
                            }
                        }
                    }
                    continue;
                };
                last = id;
                let data: Value = serde_json::from_str(&frame.data).context("a frame's data is not JSON")?;
                let created: jiff::Timestamp = data["created_at"]
                    .as_str()
                    .context("a frame has no created_at")?
                    .parse()?;
                let latency = arrived.duration_since(created);
                latencies.push(Duration::try_from(latency).unwrap_or_default());
            }
        }
        runs += 1;
        let rest = Duration::from_secs(1).saturating_sub(started.elapsed());
        tokio::time::sleep(rest).await;
    }
    Ok(Heard {
        persisted: latencies,
        deltas,
        runs,
        answered,
    })
}

/// The model server of `events` (see the header): every answer is 20 content pieces, each the
/// microseconds since the Unix epoch when it is sent, 50 ms apart (an answer streams for a
/// second, so a stream that asks again as soon as one ends keeps a run streaming at all times).
async fn model(args: &[String]) -> anyhow::Result<Value> {
    use axum::http::header::CONTENT_TYPE;
    use std::collections::HashMap;
    let port_file = args.first().context("usage: steward-bench model PORT_FILE")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let chunk = |delta: Value| format!("data: {}\n\n", json!({ "choices": [{ "index": 0, "delta": delta }] }));
    // When each user message's text first arrived in a request.
    let arrivals: Arc<std::sync::Mutex<HashMap<String, u128>>> = Arc::default();
    let noted = arrivals.clone();
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(move |body: axum::body::Bytes| {
                let arrived = now_micros();
                let request: Value = serde_json::from_slice(&body).unwrap_or_default();
                {
                    let mut arrivals = noted.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    for message in request["messages"].as_array().into_iter().flatten() {
                        if message["role"] == "user"
                            && let Some(text) = message["content"].as_str()
                        {
                            arrivals.entry(text.to_owned()).or_insert(arrived);
                        }
                    }
                }
                async move {
                    let pieces = futures_util::stream::unfold(0_u32, move |sent| async move {
                        let frame = match sent {
                            0 => chunk(json!({ "role": "assistant" })),
                            1..=20 => {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                chunk(json!({ "content": format!("{} ", now_micros()) }))
                            }
                            21 => format!(
                                "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
                                json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }),
                                json!({ "choices": [], "usage": { "prompt_tokens": 20, "completion_tokens": 20 } })
                            ),
                            _ => return None,
                        };
                        Some((Ok::<_, std::convert::Infallible>(frame), sent + 1))
                    });
                    (
                        [(CONTENT_TYPE, "text/event-stream")],
                        axum::body::Body::from_stream(pieces),
                    )
                }
            }),
        )
        .route(
            "/arrivals",
            axum::routing::get(move || {
                let arrivals = arrivals.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
                async move { axum::Json(arrivals) }
            }),
        );
    std::fs::write(port_file, listener.local_addr()?.port().to_string())?;
    // As the API does: each piece leaves at once, not behind Nagle's algorithm waiting for a
    // delayed acknowledgement (a 40 ms stall that would be charged to Steward's transport).
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(json!({}))
}

/// The token row's reference (see the header): the `model` server's answers read directly,
/// `STREAMS` at once, each piece's arrival minus its send time.
async fn direct(args: &[String]) -> anyhow::Result<Value> {
    let base = args
        .first()
        .context("usage: steward-bench direct MODEL_BASE STREAMS SECONDS")?
        .clone();
    let (streams, seconds) = (number(args, 1, "streams")?, number(args, 2, "seconds")?);
    let client = reqwest::Client::builder().pool_max_idle_per_host(streams).build()?;
    let until = Instant::now() + Duration::from_secs(seconds as u64);
    let tasks: Vec<_> = (0..streams)
        .map(|index| {
            let (client, base) = (client.clone(), base.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis((index as u64 * 7919) % 1000)).await;
                let mut latencies = Vec::new();
                while Instant::now() < until {
                    let started = Instant::now();
                    let response = client
                        .post(format!("{base}/v1/chat/completions"))
                        .json(&json!({ "model": "bench-stream", "stream": true,
                                       "messages": [{ "role": "user", "content": "direct" }] }))
                        .send()
                        .await?;
                    let mut body = response.bytes_stream();
                    let mut frames = Frames::default();
                    while let Some(chunk) = body.next().await {
                        let chunk = chunk?;
                        let now = now_micros();
                        for frame in frames.push(&chunk) {
                            let data: Value = serde_json::from_str(&frame.data).unwrap_or_default();
                            let text = data["choices"][0]["delta"]["content"].as_str().unwrap_or_default();
                            for stamp in text.split_whitespace() {
                                if let Ok(sent) = stamp.parse::<u128>() {
                                    let micros = u64::try_from(now.saturating_sub(sent)).unwrap_or(u64::MAX);
                                    latencies.push(Duration::from_micros(micros));
                                }
                            }
                        }
                    }
                    // About one answer a second per client, as the streams of `events` ask.
                    tokio::time::sleep(Duration::from_secs(1).saturating_sub(started.elapsed())).await;
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    latencies.sort();
    Ok(json!({
        "pieces": latencies.len(),
        "p50_ms": ms(percentile(&latencies, 0.50)),
        "p99_ms": ms(percentile(&latencies, 0.99)),
    }))
}

/// The reference server of idle streams (see the header).
async fn floor(args: &[String]) -> anyhow::Result<Value> {
    use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
    let port_file = args.first().context("usage: steward-bench floor PORT_FILE")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let created = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let app = axum::Router::new()
        .route(
            "/v1/sessions",
            axum::routing::post(move || {
                let session = created.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                async move { axum::Json(json!({ "session_id": session.to_string() })) }
            }),
        )
        .route(
            "/v1/sessions/{session}/events",
            axum::routing::get(|| async {
                let never = futures_util::stream::pending::<Result<axum::body::Bytes, std::convert::Infallible>>();
                (
                    [(CONTENT_TYPE, "text/event-stream"), (CACHE_CONTROL, "no-cache")],
                    axum::body::Body::from_stream(never),
                )
            }),
        );
    std::fs::write(port_file, listener.local_addr()?.port().to_string())?;
    axum::serve(listener, app).await?;
    Ok(json!({}))
}

async fn idle(args: &[String]) -> anyhow::Result<Value> {
    let streams = number(args, 2, "streams")?;
    let pid: u32 = number(args, 3, "pid")?.try_into()?;
    let hold = number(args, 4, "hold seconds")?;
    let api = Api::new(&args[0], &args[1], 64)?;
    let before = rss_kib(pid).context("read the API's resident memory")?;
    let sessions = api.sessions(streams, 32).await?;
    // A server that stops accepting (its connection cap) must fail the row, not hang the run.
    let opened: Vec<anyhow::Result<reqwest::Response>> = tokio::time::timeout(
        Duration::from_secs(300),
        futures_util::stream::iter(sessions)
            .map(|session| {
                let api = api.clone();
                async move { api.stream(&session, 0).await }
            })
            .buffer_unordered(64)
            .collect(),
    )
    .await
    .context("the streams did not all open within 5 minutes")?;
    let open: Vec<reqwest::Response> = opened.into_iter().collect::<anyhow::Result<_>>()?;
    // Held long enough for every stream's periodic re-read and heartbeat to have run.
    tokio::time::sleep(Duration::from_secs(hold as u64)).await;
    let held = rss_kib(pid).context("read the API's resident memory")?;
    let still_open = open.len();
    drop(open);
    Ok(json!({
        "streams": still_open,
        "rss_before_kib": before,
        "rss_kib": held,
    }))
}

async fn replay(args: &[String]) -> anyhow::Result<Value> {
    let session = args.get(2).context("missing session")?;
    let last = number(args, 3, "last sequence")? as i64;
    let api = Api::new(&args[0], &args[1], 1)?;
    let started = Instant::now();
    let mut stream = api.stream(session, 0).await?.bytes_stream();
    let mut frames = Frames::default();
    let mut received = 0_u64;
    'read: while let Some(chunk) = stream.next().await {
        for frame in frames.push(&chunk?) {
            if let Some(id) = frame.id {
                received += 1;
                if id == last {
                    break 'read;
                }
            }
        }
    }
    let elapsed = started.elapsed();
    if received != last as u64 {
        bail!("the replay gave {received} events, not {last}");
    }
    Ok(json!({ "events": received, "seconds": elapsed.as_secs_f64() }))
}

async fn langgraph(args: &[String]) -> anyhow::Result<Value> {
    let base = args
        .first()
        .context("missing base URL")?
        .trim_end_matches('/')
        .to_owned();
    let assistant = args.get(1).context("missing assistant")?.clone();
    let (runs, clients) = (number(args, 2, "runs")?, number(args, 3, "clients")?);
    let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;
    let threads: Vec<anyhow::Result<String>> = futures_util::stream::iter(0..runs)
        .map(|_| {
            let (client, base) = (client.clone(), base.clone());
            async move {
                let response = client.post(format!("{base}/threads")).json(&json!({})).send().await?;
                if !response.status().is_success() {
                    bail!("creating a thread answered {}", response.status());
                }
                let body: Value = response.json().await?;
                body["thread_id"].as_str().map(str::to_owned).context("thread id")
            }
        })
        .buffer_unordered(clients)
        .collect()
        .await;
    let threads: Vec<String> = threads.into_iter().collect::<anyhow::Result<_>>()?;
    let started = Instant::now();
    let results: Vec<anyhow::Result<()>> = futures_util::stream::iter(threads)
        .map(|thread| {
            let (client, base, assistant) = (client.clone(), base.clone(), assistant.clone());
            async move {
                let response = client
                    .post(format!("{base}/threads/{thread}/runs"))
                    .json(&json!({
                        "assistant_id": assistant,
                        "input": { "messages": [{ "role": "user", "content": "benchmark message" }] },
                    }))
                    .send()
                    .await?;
                if !response.status().is_success() {
                    bail!("creating a run answered {}", response.status());
                }
                Ok(())
            }
        })
        .buffer_unordered(clients)
        .collect()
        .await;
    let elapsed = started.elapsed();
    let failures = results.iter().filter(|result| result.is_err()).count();
    if failures > 0 {
        bail!("{failures} LangGraph runs failed");
    }
    Ok(json!({ "runs_per_second": runs as f64 / elapsed.as_secs_f64() }))
}
