//! Wakes event streams when their session gets new events.
//!
//! Events this process commits wake its streams in process (the store's wake-up hints); events
//! other processes commit arrive as their coalesced `NOTIFY` hints on one `LISTEN` connection
//! per API process (this process's own notifications are skipped by their origin). Both become
//! one in-process broadcast. The hint is never trusted for content: a woken stream reads the
//! events table. After the listener (re)connects, every stream is woken, since notifications sent
//! while it was away are lost; streams also re-read on a periodic tick, so a lost hint delays an
//! event, never loses it.

use std::sync::Arc;
use std::time::Duration;

use domain::ids::SessionId;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use store::{Hint, Store, TRANSIENT_CHANNEL};
use tokio::sync::broadcast::error::RecvError;
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
    pub fn start(store: &Store) -> Arc<EventHub> {
        let (sender, _) = broadcast::channel(1024);
        let (shutdown, stopped) = oneshot::channel();
        let local = store.subscribe_wakes();
        tokio::spawn(listen(
            store.pool().clone(),
            store.wake_origin(),
            local,
            sender.clone(),
            stopped,
        ));
        Arc::new(EventHub {
            sender,
            _shutdown: shutdown,
        })
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Wake> {
        self.sender.subscribe()
    }
}

async fn listen(
    pool: PgPool,
    origin: uuid::Uuid,
    local: broadcast::Receiver<Hint>,
    sender: broadcast::Sender<Wake>,
    mut stopped: oneshot::Receiver<()>,
) {
    tokio::select! {
        () = relay(pool, origin, sender.clone()) => {}
        () = relay_local(local, sender) => {}
        _ = &mut stopped => {}
    }
}

/// The wake of one hint.
fn wake(hint: Hint) -> Option<Wake> {
    match hint {
        Hint::Event(session, seq) => Some(Wake::Session(session, seq)),
        Hint::All => Some(Wake::All),
        Hint::Run | Hint::Transient(_) => None,
    }
}

/// Hints of this process's own commits.
async fn relay_local(mut local: broadcast::Receiver<Hint>, sender: broadcast::Sender<Wake>) {
    loop {
        match local.recv().await {
            Ok(hint) => {
                if let Some(wake) = wake(hint) {
                    let _ = sender.send(wake);
                }
            }
            // Some hints were missed: every stream re-reads.
            Err(RecvError::Lagged(_)) => {
                let _ = sender.send(Wake::All);
            }
            // The store is gone; the listener keeps serving what remains.
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

async fn relay(pool: PgPool, origin: uuid::Uuid, sender: broadcast::Sender<Wake>) {
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
                Ok(Some(notification)) => match store::parse_wake_payload(notification.payload()) {
                    // Heard in process already.
                    Some((from, _)) if from == origin => {}
                    Some((_, hints)) => {
                        for wake in hints.into_iter().filter_map(wake) {
                            let _ = sender.send(wake);
                        }
                    }
                    None => tracing::debug!("an events notification of another format"),
                },
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
