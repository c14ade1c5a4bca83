//! The session event stream (server-sent events).
//!
//! Persisted events are sent with their session sequence as the SSE `id`, so a client that
//! reconnects with `Last-Event-ID` gets everything after it, replayed from the database. After
//! catching up the stream follows live events, woken by the hub, and closes right after a run's
//! terminal event once no run is active; on an idle session it stays open for the next run. Transient
//! output (`assistant.delta`, `reasoning.delta`) is relayed as it comes, without an id. A comment
//! heartbeat is sent at least every 15 seconds.

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::ids::{PrincipalId, SessionId};
use futures_util::Stream;
use store::EventRow;
use tokio::sync::broadcast;
use wire::event::StreamData;
use wire::request::StreamEvents;

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Path, Query};
use crate::hub::Wake;
use crate::problem::ApiError;

const BATCH: u32 = 256;

/// The session's events as `text/event-stream`.
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}/events", tag = "runs",
    security(("bearer" = ["sessions.read"])),
    params(("session_id" = uuid::Uuid, Path), StreamEvents,
           ("Last-Event-ID" = Option<i64>, Header, minimum = 0, description = "The last sequence received; replay starts after it")),
    responses(
        (status = 200, description = "Server-sent events. A persisted event is `id: <seq>`, `event: <kind>`, \
                                      `data: <Frame>` (the event beside its position); transient output \
                                      (`assistant.delta`, `reasoning.delta`) has no `id` and `data: <Transient>`",
         content_type = "text/event-stream", body = StreamData),
    )
)]
pub async fn stream(
    State(state): State<AppState>,
    axum::Extension(caller): axum::Extension<Caller>,
    Path(session_id): Path<String>,
    Query(params): Query<StreamEvents>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let session = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    if params.after.is_some_and(|after| after < 0) {
        return Err(ApiError::new(ErrorCode::InvalidRequest)
            .detail("after must be an event sequence (0 or more)")
            .field("after"));
    }
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok())
            .filter(|seq| *seq >= 0)
            .ok_or_else(|| {
                ApiError::new(ErrorCode::InvalidRequest).detail("Last-Event-ID must be an event sequence")
            })?,
        None => params.after.unwrap_or(0),
    };
    if state.store.session(&caller.principal, session).await?.is_none() {
        return Err(ApiError::new(ErrorCode::SessionNotFound));
    }
    // Subscribe before the first read, so no wake-up between the read and the wait is missed.
    let wakes = state.hub.subscribe();
    let reread_at = tokio::time::Instant::now() + state.settings.stream_heartbeat;
    let follower = Follower {
        state,
        principal: caller.principal,
        session,
        last: after,
        wakes,
        announced: i64::MAX,
        pending: VecDeque::new(),
        ended: false,
        transient: VecDeque::new(),
        stale: true,
        reread_at,
    };
    let heartbeat = follower.state.settings.stream_heartbeat;
    let sse = Sse::new(follow(follower)).keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat"));
    let mut response = sse.into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
        .headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-cache"));
    Ok(response)
}

struct Follower {
    state: AppState,
    principal: PrincipalId,
    session: SessionId,
    last: i64,
    wakes: broadcast::Receiver<Wake>,
    /// Persisted events up to this sequence may be sent. Raised by the hub's announcements, so
    /// a transient delta published before a step is never overtaken by that step; lifted
    /// entirely when a hint may have been lost (periodic re-read, listener reconnect, lag).
    announced: i64,
    pending: VecDeque<EventRow>,
    /// Whether the last persisted event sent ended a run.
    ended: bool,
    /// Transient frames (no id) waiting to be sent.
    transient: VecDeque<Event>,
    /// Whether the database may hold something not yet read: set by every wake-up except a
    /// transient frame, so streamed deltas cost no queries.
    stale: bool,
    /// When the next periodic re-read is due. A fixed schedule, so a steady flow of transient
    /// frames cannot postpone it (a lost hint costs at most one heartbeat).
    reread_at: tokio::time::Instant,
}

fn frame(event: EventRow) -> Event {
    let (seq, kind) = (event.seq, event.event.kind());
    let data = serde_json::to_string(&event.into_frame()).unwrap_or_default();
    Event::default().id(seq.to_string()).event(kind).data(data)
}

fn follow(follower: Follower) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(follower, |mut follower| async move {
        loop {
            if let Some(frame) = follower.transient.pop_front() {
                return Some((Ok(frame), follower));
            }
            if let Some(event) = follower.pending.pop_front() {
                follower.last = event.seq;
                follower.ended = event.event.ends_run();
                let frame = frame(event);
                return Some((Ok(frame), follower));
            }
            if follower.stale {
                let store = &follower.state.store;
                // Whether a run is active is read before the events: a run's terminal event commits
                // with its state, so if it had ended by the first read, the second one returns it.
                let idle = match store.active_run(follower.session).await {
                    Ok(active) => active.is_none(),
                    Err(error) => {
                        tracing::warn!(%error, "event stream cannot read the run state; closing");
                        return None;
                    }
                };
                let events = match store
                    .events_after(&follower.principal, follower.session, follower.last, BATCH)
                    .await
                {
                    Ok(events) => events,
                    Err(error) => {
                        tracing::warn!(%error, "event stream cannot read events; closing");
                        return None;
                    }
                };
                let unsent = !events.is_empty();
                let announced = follower.announced;
                follower
                    .pending
                    .extend(events.into_iter().filter(|event| event.seq <= announced));
                if !follower.pending.is_empty() {
                    // Stays stale: a full batch may have more behind it.
                    continue;
                }
                if !unsent {
                    // Caught up with no active run, right after a run's terminal event: the run is
                    // over and so is the stream. An idle session otherwise keeps its stream open
                    // for the next run (the logical stream survives between runs).
                    if idle && follower.ended {
                        return None;
                    }
                    if idle && !matches!(store.session(&follower.principal, follower.session).await, Ok(Some(_))) {
                        return None;
                    }
                    // From here on only announced events are sent.
                    follower.announced = follower.last;
                }
                follower.stale = false;
            }
            wait(&mut follower).await?;
        }
    })
}

/// Waits for a wake-up for this session (or everyone), or the periodic re-read.
async fn wait(follower: &mut Follower) -> Option<()> {
    let tick = tokio::time::sleep_until(follower.reread_at);
    tokio::pin!(tick);
    loop {
        tokio::select! {
            received = follower.wakes.recv() => match received {
                Ok(Wake::Session(session, seq)) if session == follower.session => {
                    follower.announced = follower.announced.max(seq);
                    follower.stale = true;
                    return Some(());
                }
                Ok(Wake::Transient { session, kind, data }) if session == follower.session => {
                    // Best effort and never persisted: no id, so it never moves the replay cursor.
                    follower.transient.push_back(Event::default().event(kind).data(data.as_ref()));
                    return Some(());
                }
                Ok(Wake::Session(..) | Wake::Transient { .. }) => continue,
                Ok(Wake::All) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    follower.announced = i64::MAX;
                    follower.stale = true;
                    return Some(());
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            },
            () = &mut tick => {
                follower.reread_at = tokio::time::Instant::now() + follower.state.settings.stream_heartbeat;
                follower.announced = i64::MAX;
                follower.stale = true;
                return Some(());
            }
        }
    }
}
