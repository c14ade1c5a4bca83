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
use tokio::sync::{broadcast, oneshot};

/// What a stream is woken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    Session(SessionId),
    /// Anything may have changed: every stream re-reads.
    All,
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
        if let Err(error) = listener.listen(store::EVENTS_CHANNEL).await {
            tracing::warn!(%error, "event listener cannot LISTEN");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let _ = sender.send(Wake::All);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    if let Some(session) = SessionId::parse(notification.payload()) {
                        let _ = sender.send(Wake::Session(session));
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
