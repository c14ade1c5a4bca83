//! Following a session's event stream: incremental SSE parsing (`eventsource-stream`), a replay
//! cursor that only persisted ids advance, reconnection with `Last-Event-ID` (backing off, or
//! waiting as long as the server's `retry:` asks), and a logical stream that ends only with a
//! run's terminal event. Raw reasoning is never handed on: it becomes an indicator.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::Method;
use uuid::Uuid;
use wire::event::{Event, Frame, Transient};

use crate::{Client, Result};

/// What the stream brings.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// A persisted event, each exactly once and in order.
    Event(Box<Frame>),
    /// A piece of the answer being written (best effort: it may be missing after a reconnect;
    /// the persisted `assistant.message` is the answer).
    Delta { run_id: Uuid, text: String },
    /// The model is reasoning; its text is not kept.
    Reasoning { run_id: Uuid },
}

type Source = Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, EventStreamError<reqwest::Error>>> + Send>>;

/// A logical stream of one session's events, across as many connections as it takes.
pub struct Follow {
    client: Client,
    session: Uuid,
    replay: Replay,
    source: Option<Source>,
    retry: Duration,
    failures: u32,
}

/// The replay cursor of a stream, apart from its transport: what each received SSE event means,
/// given what was handed on before. A client with a transport of its own can use it alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    /// The last persisted sequence handed on.
    cursor: i64,
    /// The run whose end ends the stream; `None`: the first run's end.
    until: Option<Uuid>,
    done: bool,
}

impl std::fmt::Debug for Follow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow")
            .field("session", &self.session)
            .field("cursor", &self.replay.cursor)
            .field("until", &self.replay.until)
            .finish_non_exhaustive()
    }
}

/// The run an event belongs to, from its payload.
fn run_of(event: &Event) -> Option<Uuid> {
    match event {
        Event::RunCompleted(ended) => Some(ended.run_id),
        Event::RunFailed(ended) => Some(ended.run_id),
        Event::RunCancelled(ended) => Some(ended.run_id),
        _ => None,
    }
}

impl Client {
    /// Follows `session`'s events after sequence `after` until the end of run `until` (or of
    /// the first run to end, when `None`).
    pub fn follow(&self, session: Uuid, after: i64, until: Option<Uuid>) -> Follow {
        Follow {
            client: self.clone(),
            session,
            replay: Replay::new(after, until),
            source: None,
            retry: Duration::from_millis(250),
            failures: 0,
        }
    }
}

impl Follow {
    /// The last persisted sequence handed on: where a later stream would resume.
    pub fn cursor(&self) -> i64 {
        self.replay.cursor
    }

    async fn connect(&mut self) -> Result<Source> {
        let mut request = self
            .client
            .request(Method::GET, &format!("v1/sessions/{}/events", self.session))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if self.replay.cursor > 0 {
            request = request.header("Last-Event-ID", self.replay.cursor.to_string());
        }
        let response = self.client.checked(request).await?;
        Ok(Box::pin(response.bytes_stream().eventsource()))
    }

    /// Waits before reconnecting: the server's `retry:`, doubled for each failure in a row (at
    /// most 10 s).
    async fn back_off(&mut self) {
        // A `retry: 0` must not become a tight loop.
        let wait = self
            .retry
            .max(Duration::from_millis(100))
            .saturating_mul(1 << self.failures.min(5))
            .min(Duration::from_secs(10));
        self.failures += 1;
        tokio::time::sleep(wait).await;
    }

    /// The next update; `None` once the run has ended. A refusal (401, 403, 404) ends the stream
    /// with its error; a lost connection, a 5xx or a 429 (a proxy while the server restarts) is
    /// retried.
    pub async fn next(&mut self) -> Option<Result<Update>> {
        loop {
            if self.replay.done {
                return None;
            }
            let Some(source) = self.source.as_mut() else {
                match self.connect().await {
                    Ok(source) => {
                        self.source = Some(source);
                        continue;
                    }
                    Err(error) if error.retryable() => {
                        if self.failures >= 8 {
                            self.replay.done = true;
                            return Some(Err(error));
                        }
                        self.back_off().await;
                        continue;
                    }
                    Err(error) => {
                        self.replay.done = true;
                        return Some(Err(error));
                    }
                }
            };
            let event = match source.next().await {
                Some(Ok(event)) => event,
                // The connection ended or broke before the run did: resume after the cursor.
                Some(Err(_)) | None => {
                    self.source = None;
                    self.back_off().await;
                    continue;
                }
            };
            self.failures = 0;
            if let Some(retry) = event.retry {
                self.retry = retry;
            }
            if let Some(update) = self.replay.update(&event.id, &event.event, &event.data) {
                if self.replay.done {
                    self.source = None;
                }
                return Some(Ok(update));
            }
        }
    }
}

impl Replay {
    /// A cursor after sequence `after`, ending with run `until` (or the first run to end).
    pub fn new(after: i64, until: Option<Uuid>) -> Replay {
        Replay {
            cursor: after,
            until,
            done: false,
        }
    }

    /// The last persisted sequence handed on: the `Last-Event-ID` of the next connection.
    pub fn cursor(&self) -> i64 {
        self.cursor
    }

    /// Whether the run being followed has ended.
    pub fn done(&self) -> bool {
        self.done
    }

    /// What one SSE event (its `id`, `event` and `data` fields) means; `None` for one to skip
    /// (already handed on, unknown, or not well formed: a stream's bytes are untrusted).
    pub fn update(&mut self, id: &str, kind: &str, data: &str) -> Option<Update> {
        if kind == "assistant.delta" || kind == "reasoning.delta" {
            return match serde_json::from_str::<Transient>(data) {
                Ok(Transient::AssistantDelta(delta)) => Some(Update::Delta {
                    run_id: delta.run_id,
                    text: delta.text,
                }),
                Ok(Transient::ReasoningDelta(delta)) => Some(Update::Reasoning { run_id: delta.run_id }),
                Err(_) => None,
            };
        }
        // A persisted event: its id is its sequence. Sequences need not be contiguous; only one
        // not above the cursor is a repeat.
        let seq: i64 = id.trim().parse().ok()?;
        if seq <= self.cursor {
            return None;
        }
        // An event this client does not know (a newer server's kind) is passed over, but the
        // cursor still moves past it so a reconnection does not ask for it again.
        self.cursor = seq;
        let frame: Frame = serde_json::from_str(data).ok()?;
        if frame.event.ends_run() {
            let run = frame.run_id.or_else(|| run_of(&frame.event));
            if self.until.is_none() || self.until == run {
                self.done = true;
            }
        }
        Some(Update::Event(Box::new(frame)))
    }
}
