//! The session event stream (server-sent events).
//!
//! Persisted events are sent with their session sequence as the SSE `id`, so a client that
//! reconnects with `Last-Event-ID` gets everything after it, replayed from the database. After
//! catching up the stream follows live events, woken by the hub, and closes right after a run's
//! terminal event once no run is active; on an idle session it stays open for the next run. Transient
//! output (`assistant.delta`, `reasoning.delta`) is relayed as it comes, without an id. A comment
//! heartbeat is sent at least every 15 seconds.
//!
//! The SSE framing is written here rather than by axum's `Sse`, which makes one body chunk per
//! event: stored frames are sent as stored (never parsed back into the typed vocabulary) and as
//! many as fit go out in one chunk of about 64 KiB, so a replay costs few writes.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt::Write as _;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::ids::{PrincipalId, SessionId};
use futures_util::Stream;
use store::StoredFrame;
use tokio::sync::broadcast;
use wire::event::StreamData;
use wire::request::StreamEvents;

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Path, Query};
use crate::hub::{Subscription, Wake};
use crate::problem::ApiError;

/// Stored events read at a time, at first; later reads size their page from the frames read so
/// far, to about [`PAGE_BYTES`], within [`PAGE_RANGE`].
const PAGE: u32 = 1000;
const PAGE_BYTES: usize = 2 * 1024 * 1024;
const PAGE_RANGE: (u32, u32) = (64, 8192);
/// A chunk of the response body is closed once it holds this many bytes of frames.
const CHUNK: usize = 64 * 1024;
/// The comment sent on every periodic re-read, so proxies and clients see a live connection.
const HEARTBEAT: &[u8] = b": heartbeat\n\n";

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
        Some(value) => last_event_id(value)?,
        None => params.after.unwrap_or(0),
    };
    if state.store.session(&caller.principal, session).await?.is_none() {
        return Err(ApiError::new(ErrorCode::SessionNotFound));
    }
    // Subscribe before the first read, so no wake-up between the read and the wait is missed.
    let wakes = state.hub.subscribe(session);
    let reread_at = tokio::time::Instant::now() + state.settings.stream_heartbeat;
    let follower = Follower {
        state,
        principal: caller.principal,
        session,
        last: after,
        wakes,
        announced: i64::MAX,
        page: PAGE,
        pending: VecDeque::new(),
        outgoing: VecDeque::new(),
        ended: false,
        stale: true,
        draining: false,
        reread_at,
    };
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        ),
    ];
    Ok((headers, Body::from_stream(follow(follower))).into_response())
}

/// The sequence a reconnecting client's `Last-Event-ID` names: decimal digits, as the stream's
/// `id:` fields are written (surrounding spaces allowed; no sign); anything else is
/// `400 invalid_request`.
pub fn last_event_id(value: &HeaderValue) -> Result<i64, ApiError> {
    value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|text| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|text| text.parse::<i64>().ok())
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidRequest).detail("Last-Event-ID must be an event sequence"))
}

struct Follower {
    state: AppState,
    principal: PrincipalId,
    session: SessionId,
    /// The last persisted sequence queued for sending.
    last: i64,
    wakes: Subscription,
    /// Persisted events up to this sequence may be sent. Raised by the hub's announcements, so
    /// a transient delta published before a step is never overtaken by that step; lifted
    /// entirely when a hint may have been lost (periodic re-read, listener reconnect, lag).
    announced: i64,
    /// How many stored events the next read asks for.
    page: u32,
    /// Read persisted events waiting to be written into a chunk.
    pending: VecDeque<StoredFrame>,
    /// Chunks ready to send, in order: pages of persisted frames, transient frames, heartbeats.
    outgoing: VecDeque<Bytes>,
    /// Whether the last persisted event queued ended a run.
    ended: bool,
    /// Whether the database may hold something not yet read: set by every wake-up except a
    /// transient frame, so streamed deltas cost no queries.
    stale: bool,
    /// Whether the last read filled its page, so more is certainly behind it: the next read skips
    /// the run state, which only matters once the stream has caught up.
    draining: bool,
    /// When the next periodic re-read (and heartbeat) is due. A fixed schedule, so a steady flow
    /// of transient frames cannot postpone it (a lost hint costs at most one heartbeat).
    reread_at: tokio::time::Instant,
}

/// Writes queued persisted frames into one chunk of about [`CHUNK`] bytes: a replay goes out in
/// few large writes instead of one per event.
fn chunk(pending: &mut VecDeque<StoredFrame>) -> Bytes {
    let mut out = String::with_capacity(CHUNK + 1024);
    while let Some(frame) = pending.pop_front() {
        let _ = write!(
            out,
            "id: {}\nevent: {}\ndata: {}\n\n",
            frame.seq, frame.kind, frame.data
        );
        if out.len() >= CHUNK {
            break;
        }
    }
    Bytes::from(out)
}

fn follow(follower: Follower) -> impl Stream<Item = Result<Bytes, Infallible>> {
    futures_util::stream::unfold(follower, |mut follower| async move {
        loop {
            if let Some(bytes) = follower.outgoing.pop_front() {
                return Some((Ok(bytes), follower));
            }
            if !follower.pending.is_empty() {
                let bytes = chunk(&mut follower.pending);
                return Some((Ok(bytes), follower));
            }
            if follower.stale {
                let store = &follower.state.store;
                // Whether a run is active is read before the events: a run's terminal event commits
                // with its state, so if it had ended by the first read, the second one returns it.
                // While draining full pages it is not needed (the stream cannot close there).
                let idle = if follower.draining {
                    None
                } else {
                    // Database reads are boxed: the stream's state machine stays small while it
                    // waits, which is most of its life (thousands of idle streams).
                    match Box::pin(store.active_run(follower.session)).await {
                        Ok(active) => Some(active.is_none()),
                        Err(error) => {
                            tracing::warn!(%error, "event stream cannot read the run state; closing");
                            return None;
                        }
                    }
                };
                let frames = match Box::pin(store.frames_after(
                    &follower.principal,
                    follower.session,
                    follower.last,
                    follower.page,
                ))
                .await
                {
                    Ok(frames) => frames,
                    Err(error) => {
                        tracing::warn!(%error, "event stream cannot read events; closing");
                        return None;
                    }
                };
                let full = frames.len() == follower.page as usize;
                if !frames.is_empty() {
                    let bytes: usize = frames.iter().map(|frame| frame.data.len()).sum();
                    let per_frame = (bytes / frames.len()).max(1);
                    follower.page = u32::try_from(PAGE_BYTES / per_frame)
                        .unwrap_or(u32::MAX)
                        .clamp(PAGE_RANGE.0, PAGE_RANGE.1);
                }
                let unsent = !frames.is_empty();
                let announced = follower.announced;
                for frame in frames.into_iter().take_while(|frame| frame.seq <= announced) {
                    follower.last = frame.seq;
                    follower.ended = frame.ends_run;
                    follower.pending.push_back(frame);
                }
                if !follower.pending.is_empty() {
                    // Stays stale: there may be more behind this page.
                    follower.draining = full;
                    continue;
                }
                follower.draining = false;
                if !unsent {
                    let Some(idle) = idle else {
                        // Caught up while draining: read again, with the run state first.
                        continue;
                    };
                    // Caught up with no active run, right after a run's terminal event: the run is
                    // over and so is the stream. An idle session otherwise keeps its stream open
                    // for the next run (the logical stream survives between runs).
                    if idle && follower.ended {
                        return None;
                    }
                    if idle
                        && !matches!(
                            Box::pin(store.session(&follower.principal, follower.session)).await,
                            Ok(Some(_))
                        )
                    {
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

/// Waits for a wake-up for this session (or everyone), or the periodic re-read, which also sends
/// a heartbeat comment.
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
                    follower.outgoing.push_back(Bytes::from(format!("event: {kind}\ndata: {data}\n\n")));
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
                follower.outgoing.push_back(Bytes::from_static(HEARTBEAT));
                follower.announced = i64::MAX;
                follower.stale = true;
                return Some(());
            }
        }
    }
}
