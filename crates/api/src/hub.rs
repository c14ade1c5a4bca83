//! Wakes event streams when their session gets new events.
//!
//! Events this process commits wake its streams in process (the store's wake-up hints); events
//! other processes commit arrive as their coalesced `NOTIFY` hints on one `LISTEN` connection
//! per API process (this process's own notifications are skipped by their origin). Both become
//! wake-ups routed by session: each session with open streams has its own small broadcast
//! channel, so a hint wakes only that session's streams (and `All` wakes every one). The hint is
//! never trusted for content: a woken stream reads the events table. Transient notices (streamed
//! text and reasoning) arrive sealed (`store::sealed`) and are opened here with the stream key;
//! anything else on their channel is dropped. After the listener (re)connects, every stream is woken, since notifications sent
//! while it was away are lost; streams also re-read on a periodic tick, so a lost hint delays an
//! event, never loses it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use domain::ids::SessionId;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use store::sealed::{Opener, StreamKey};
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

/// Wake-ups a session's streams can have waiting before the slowest of them lags (and then
/// re-reads, which loses nothing but transient frames). Small, since every session with an open
/// stream holds one such channel.
const PER_SESSION: usize = 16;

/// Each session's channel, for the sessions that have open streams.
#[derive(Debug, Default)]
struct Routes {
    sessions: Mutex<HashMap<SessionId, broadcast::Sender<Wake>>>,
}

impl Routes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, broadcast::Sender<Wake>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `wake` to the streams it concerns; nobody listening is fine.
    fn send(&self, wake: Wake) {
        let sessions = self.lock();
        match &wake {
            Wake::Session(session, _) | Wake::Transient { session, .. } => {
                if let Some(sender) = sessions.get(session) {
                    let _ = sender.send(wake);
                }
            }
            Wake::All => {
                for sender in sessions.values() {
                    let _ = sender.send(Wake::All);
                }
            }
        }
    }
}

/// A stream's wake-ups: its session's, and those for everyone.
#[derive(Debug)]
pub struct Subscription {
    session: SessionId,
    /// Taken only when the subscription is dropped.
    receiver: Option<broadcast::Receiver<Wake>>,
    routes: Arc<Routes>,
}

impl Subscription {
    pub async fn recv(&mut self) -> Result<Wake, RecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => Err(RecvError::Closed),
        }
    }
}

impl Drop for Subscription {
    /// The last stream of a session removes its channel. The receiver is dropped under the lock
    /// every subscription is made under, so the count is exact.
    fn drop(&mut self) {
        let mut sessions = self.routes.lock();
        drop(self.receiver.take());
        if sessions
            .get(&self.session)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            sessions.remove(&self.session);
        }
    }
}

#[derive(Debug)]
pub struct EventHub {
    routes: Arc<Routes>,
    /// Dropped with the hub, which ends the listener task.
    _shutdown: oneshot::Sender<()>,
}

impl EventHub {
    pub fn start(store: &Store) -> Arc<EventHub> {
        let routes = Arc::new(Routes::default());
        let (shutdown, stopped) = oneshot::channel();
        let local = store.subscribe_wakes();
        tokio::spawn(listen(
            store.pool().clone(),
            store.wake_origin(),
            local,
            routes.clone(),
            stopped,
        ));
        Arc::new(EventHub {
            routes,
            _shutdown: shutdown,
        })
    }

    /// Wake-ups for the streams of `session`, from now on.
    pub fn subscribe(&self, session: SessionId) -> Subscription {
        subscribe(&self.routes, session)
    }
}

fn subscribe(routes: &Arc<Routes>, session: SessionId) -> Subscription {
    let receiver = routes
        .lock()
        .entry(session)
        .or_insert_with(|| broadcast::channel(PER_SESSION).0)
        .subscribe();
    Subscription {
        session,
        receiver: Some(receiver),
        routes: routes.clone(),
    }
}

async fn listen(
    pool: PgPool,
    origin: uuid::Uuid,
    local: broadcast::Receiver<Hint>,
    routes: Arc<Routes>,
    mut stopped: oneshot::Receiver<()>,
) {
    tokio::select! {
        () = relay(pool, origin, routes.clone()) => {}
        () = relay_local(local, routes) => {}
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
async fn relay_local(mut local: broadcast::Receiver<Hint>, routes: Arc<Routes>) {
    loop {
        match local.recv().await {
            Ok(hint) => {
                if let Some(wake) = wake(hint) {
                    routes.send(wake);
                }
            }
            // Some hints were missed: every stream re-reads.
            Err(RecvError::Lagged(_)) => {
                routes.send(Wake::All);
            }
            // The store is gone; the listener keeps serving what remains.
            Err(RecvError::Closed) => std::future::pending().await,
        }
    }
}

async fn relay(pool: PgPool, origin: uuid::Uuid, routes: Arc<Routes>) {
    // Opens the workers' sealed transient notices; the stream key is read once, when the
    // first notice arrives (and, should that fail, again at most every KEY_RETRY).
    let mut opener: Option<Opener> = None;
    let mut key_retry_at = std::time::Instant::now();
    let mut refusals = Refusals::default();
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
        routes.send(Wake::All);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) if notification.channel() == TRANSIENT_CHANNEL => {
                    if opener.is_none() && std::time::Instant::now() >= key_retry_at {
                        // On the listener's own connection: waiting for the pool here (busy
                        // with the very streams this relay wakes) would stall every stream.
                        opener = stream_opener(&mut listener).await;
                        key_retry_at = std::time::Instant::now() + KEY_RETRY;
                    }
                    if let Some(wake) = opener
                        .as_mut()
                        .and_then(|opener| transient(opener, notification.payload(), &mut refusals))
                    {
                        routes.send(wake);
                    }
                }
                Ok(Some(notification)) => match store::parse_wake_payload(notification.payload()) {
                    // Heard in process already.
                    Some((from, _)) if from == origin => {}
                    Some((_, hints)) => {
                        for wake in hints.into_iter().filter_map(wake) {
                            routes.send(wake);
                        }
                    }
                    None => tracing::debug!("an events notification of another format"),
                },
                // The connection dropped and is re-established on the next call: hints may be lost.
                Ok(None) => {
                    routes.send(Wake::All);
                }
                Err(error) => {
                    tracing::warn!(%error, "event listener failed; reconnecting");
                    routes.send(Wake::All);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
            }
        }
    }
}

/// How long after failing to read the stream key the relay tries again.
const KEY_RETRY: Duration = Duration::from_secs(10);
/// Refused notices are logged at most this often (any login may `NOTIFY`: a flood of forged
/// ones must not become a flood of log lines).
const REFUSALS_LOGGED_EVERY: Duration = Duration::from_secs(60);

/// Refused transient notices since the last log line.
#[derive(Default)]
struct Refusals {
    count: u64,
    logged_at: Option<std::time::Instant>,
}

impl Refusals {
    fn note(&mut self, refused: store::sealed::Refused) {
        self.count += 1;
        if self.logged_at.is_none_or(|at| at.elapsed() >= REFUSALS_LOGGED_EVERY) {
            tracing::warn!(
                ?refused,
                refused_since_last_line = self.count,
                "transient notices were refused (not sealed under the stream key, replayed or stale); no stream shows them"
            );
            self.count = 0;
            self.logged_at = Some(std::time::Instant::now());
        }
    }
}

/// The opener of sealed notices, with the stream key read by the api login on `listener`'s
/// connection.
async fn stream_opener(listener: &mut PgListener) -> Option<Opener> {
    match StreamKey::load(listener).await {
        Ok(key) => Some(Opener::new(key)),
        Err(error) => {
            tracing::warn!(%error, "cannot read the stream key; streamed output waits for its step");
            None
        }
    }
}

/// Opens a worker's sealed transient notice and parses it into the frame data streams send.
/// Anything not sealed under the stream key (forged, altered, replayed or stale) is dropped.
fn transient(opener: &mut Opener, payload: &str, refusals: &mut Refusals) -> Option<Wake> {
    let payload = match opener.open(TRANSIENT_CHANNEL, payload) {
        Ok(notice) => notice,
        Err(refused) => {
            refusals.note(refused);
            return None;
        }
    };
    let notice: TransientNotice = serde_json::from_str(&payload).ok()?;
    let data = serde_json::to_string(&notice.output).ok()?;
    Some(Wake::Transient {
        session: SessionId::from_uuid(notice.session_id),
        kind: notice.output.kind(),
        data: Arc::from(data),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(subscription: &mut Subscription) -> Option<Wake> {
        subscription.receiver.as_mut()?.try_recv().ok()
    }

    #[test]
    fn a_wake_reaches_only_its_sessions_streams_and_the_last_stream_removes_the_channel() {
        let routes = Arc::new(Routes::default());
        let (a, b) = (
            SessionId::from_uuid(uuid::Uuid::new_v4()),
            SessionId::from_uuid(uuid::Uuid::new_v4()),
        );
        let (mut first, mut second, mut other) = (subscribe(&routes, a), subscribe(&routes, a), subscribe(&routes, b));
        routes.send(Wake::Session(a, 3));
        assert_eq!(waiting(&mut first), Some(Wake::Session(a, 3)));
        assert_eq!(waiting(&mut second), Some(Wake::Session(a, 3)));
        assert_eq!(waiting(&mut other), None);
        routes.send(Wake::All);
        for subscription in [&mut first, &mut second, &mut other] {
            assert_eq!(waiting(subscription), Some(Wake::All));
        }
        drop(first);
        assert!(routes.lock().contains_key(&a), "a stream of the session remains");
        drop(second);
        assert!(!routes.lock().contains_key(&a));
        assert!(routes.lock().contains_key(&b));
        drop(other);
        assert!(routes.lock().is_empty());
    }
}
