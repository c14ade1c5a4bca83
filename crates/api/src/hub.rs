//! Wakes event streams when their session gets new events.
//!
//! One `LISTEN` connection per API process turns `NOTIFY` hints into an in-process broadcast.
//! The hint is never trusted for content: a woken stream reads the events table. After the
//! listener (re)connects, every stream is woken, since notifications sent while it was away are
//! lost; streams also re-read on a periodic tick, so a lost hint delays an event, never loses it.

use std::sync::Arc;
use std::time::Duration;

use domain::ids::SessionId;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use store::TRANSIENT_CHANNEL;
use tokio::sync::{broadcast, oneshot};
use wire::event::TransientNotice;

/// What a stream is woken for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The session's event with this sequence committed.
    Session(SessionId, i64),
    /// Anything may have changed: every stream re-reads.
    All,
    /// Transient output of a run (never persisted): the event kind and its JSON data.
    Transient {
        session: SessionId,
        kind: &'static str,
        data: Arc<str>,
    },
}

#[derive(Debug)]
pub struct EventHub {
    sender: broadcast::Sender<Wake>,
    /// Dropped with the hub, which ends the listener task.
    _shutdown: oneshot::Sender<()>,
}

impl EventHub {
    pub fn start(pool: PgPool) -> Arc<EventHub> {
        let (sender, _) = broadcast::channel(1024);
        let (shutdown, stopped) = oneshot::channel();
        tokio::spawn(listen(pool, sender.clone(), stopped));
        Arc::new(EventHub {
            sender,
            _shutdown: shutdown,
        })
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Wake> {
        self.sender.subscribe()
    }
}

async fn listen(pool: PgPool, sender: broadcast::Sender<Wake>, mut stopped: oneshot::Receiver<()>) {
    tokio::select! {
        () = relay(pool, sender) => {}
        _ = &mut stopped => {}
    }
}

async fn relay(pool: PgPool, sender: broadcast::Sender<Wake>) {
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::debug!(%error, "event listener cannot connect yet");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(error) = listener.listen_all([store::EVENTS_CHANNEL, TRANSIENT_CHANNEL]).await {
            tracing::warn!(%error, "event listener cannot LISTEN");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let _ = sender.send(Wake::All);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) if notification.channel() == TRANSIENT_CHANNEL => {
                    if let Some(wake) = transient(notification.payload()) {
                        let _ = sender.send(wake);
                    }
                }
                Ok(Some(notification)) => {
                    let announced = notification
                        .payload()
                        .split_once(' ')
                        .and_then(|(session, seq)| Some(Wake::Session(SessionId::parse(session)?, seq.parse().ok()?)));
                    if let Some(wake) = announced {
                        let _ = sender.send(wake);
                    }
                }
                // The connection dropped and is re-established on the next call: hints may be lost.
                Ok(None) => {
                    let _ = sender.send(Wake::All);
                }
                Err(error) => {
                    tracing::warn!(%error, "event listener failed; reconnecting");
                    let _ = sender.send(Wake::All);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
            }
        }
    }
}

/// Parses a worker's transient notice into the frame data streams send.
fn transient(payload: &str) -> Option<Wake> {
    let notice: TransientNotice = serde_json::from_str(payload).ok()?;
    let data = serde_json::to_string(&notice.output).ok()?;
    Some(Wake::Transient {
        session: SessionId::from_uuid(notice.session_id),
        kind: notice.output.kind(),
        data: Arc::from(data),
    })
}
