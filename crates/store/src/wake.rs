//! Wake-up hints, sent after commit and never from inside the committing transaction.
//!
//! `NOTIFY` takes a database-wide lock held through commit, so a transaction that notifies is
//! serialized with every other one's WAL flush and group commit stops working. Writers therefore
//! only collect hints while their transaction runs ([`hint`], inside [`Store::transaction`]);
//! once it commits, [`Wakes::publish`] hands them to this process's subscribers at once
//! ([`Store::subscribe_wakes`]: the API's streams, a worker's claim loop) and to one notifier
//! task, which tells other processes with one coalesced `NOTIFY` per channel, at most one every
//! [`WAKE_SPACING`]. A rollback drops its hints.
//!
//! A hint is never the truth: readers re-read the tables (streams on their heartbeat, workers
//! on their poll), so a lost hint costs latency, never an event or a run.
//!
//! Notification payloads start with the sending store's origin (a random id), so a process can
//! skip what it already heard in process; an events payload then lists `<session> <seq>` lines,
//! or `*` when there were too many to list.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use domain::ids::SessionId;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::{broadcast, mpsc};
use uuid::Uuid;

use crate::sealed::{Sealer, StreamKey};

/// The channel workers publish transient output on; the payload is a
/// [`wire::event::TransientNotice`] sealed under the stream key ([`crate::sealed`]).
pub const TRANSIENT_CHANNEL: &str = "steward_transient";

/// The notification channel of committed events.
pub const EVENTS_CHANNEL: &str = "steward_events";

/// The notification channel that wakes workers.
pub const RUNS_CHANNEL: &str = "steward_runs";

/// The least time between two notifications of the notifier.
pub const WAKE_SPACING: Duration = Duration::from_millis(2);

/// A notification payload stays well under PostgreSQL's 8000-byte limit.
const MAX_PAYLOAD: usize = 7000;

/// What committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hint {
    /// The session's event with this sequence (0: the session was deleted).
    Event(SessionId, i64),
    /// A run became claimable.
    Run,
    /// Anything may have changed (a notification listed too much to say what).
    All,
    /// A worker's transient notice (a [`wire::event::TransientNotice`]), for other processes
    /// only; it goes out in order with the hints around it.
    Transient(String),
}

tokio::task_local! {
    /// The hints of the transaction this task is running.
    static PENDING: Arc<Mutex<Vec<Hint>>>;
}

/// Records a hint for when the caller's transaction commits.
pub(crate) fn hint(hint: Hint) {
    let recorded = PENDING.try_with(|pending| {
        pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(hint);
    });
    debug_assert!(recorded.is_ok(), "a wake-up hint outside Store::transaction");
}

/// Runs `work` collecting its hints; they are returned for the caller to publish after commit.
pub(crate) async fn collecting<T>(work: impl Future<Output = T>) -> (T, Vec<Hint>) {
    let pending = Arc::new(Mutex::new(Vec::new()));
    let outcome = PENDING.scope(pending.clone(), work).await;
    let hints = std::mem::take(&mut *pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    (outcome, hints)
}

/// One store's wake-ups: its local subscribers and its notifier.
#[derive(Debug)]
pub struct Wakes {
    origin: Uuid,
    local: broadcast::Sender<Hint>,
    notifier: OnceLock<mpsc::UnboundedSender<Hint>>,
    /// Hints are dropped instead of sent (tests of the re-read paths).
    muted: bool,
}

impl Wakes {
    pub(crate) fn new(muted: bool) -> Wakes {
        let (local, _) = broadcast::channel(4096);
        Wakes {
            origin: Uuid::new_v4(),
            local,
            notifier: OnceLock::new(),
            muted,
        }
    }

    /// This store's origin, which begins every notification it sends.
    pub fn origin(&self) -> Uuid {
        self.origin
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Hint> {
        self.local.subscribe()
    }

    /// Publishes committed hints: in process now, to other processes by the notifier.
    pub(crate) fn publish(&self, pool: &PgPool, hints: Vec<Hint>) {
        if self.muted || hints.is_empty() {
            return;
        }
        let notifier = self.notifier.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(notify(pool.clone(), self.origin, receiver));
            sender
        });
        for hint in hints {
            // No local subscriber is fine; neither is a notifier that stopped (the runtime ends).
            if !matches!(hint, Hint::Transient(_)) {
                let _ = self.local.send(hint.clone());
            }
            let _ = notifier.send(hint);
        }
    }
}

/// The notifier, on its own connection: the first hint after a pause goes out at once; hints
/// arriving while it waits out [`WAKE_SPACING`] go out together in the next batch, one
/// statement whose notifications keep the order of the hints (a transient delta published
/// before a step is announced before it).
async fn notify(pool: PgPool, origin: Uuid, mut hints: mpsc::UnboundedReceiver<Hint>) {
    let mut connection: Option<PgConnection> = None;
    // Transient notices leave sealed (`sealed`), under the stream key read once with this
    // store's login; without it they are not sent at all, never in the clear.
    let mut sealer: Option<Sealer> = None;
    let mut key_retry_at = std::time::Instant::now();
    while let Some(first) = hints.recv().await {
        let mut batch = vec![first];
        while let Ok(hint) = hints.try_recv() {
            batch.push(hint);
        }
        if connection.is_none() {
            match PgConnection::connect_with(&pool.connect_options()).await {
                Ok(opened) => connection = Some(opened),
                Err(error) => tracing::warn!(%error, "cannot connect to send wake-up notifications"),
            }
        }
        if let Some(open) = connection.as_mut() {
            if sealer.is_none()
                && std::time::Instant::now() >= key_retry_at
                && batch.iter().any(|hint| matches!(hint, Hint::Transient(_)))
            {
                match StreamKey::load(&mut *open).await {
                    Ok(key) => sealer = Some(Sealer::new(&key, origin)),
                    Err(error) => {
                        // Tried again at most every 10 s: not once per delta.
                        key_retry_at = std::time::Instant::now() + Duration::from_secs(10);
                        tracing::warn!(%error, "cannot read the stream key; streamed output is not relayed");
                    }
                }
            }
            let (channels, payloads): (Vec<&str>, Vec<String>) = notifications(origin, &batch)
                .into_iter()
                .filter_map(|(channel, payload)| match (channel, sealer.as_mut()) {
                    (TRANSIENT_CHANNEL, Some(sealer)) => Some((channel, sealer.seal(channel, &payload))),
                    (TRANSIENT_CHANNEL, None) => None,
                    _ => Some((channel, payload)),
                })
                .unzip();
            let sent = sqlx::query(
                "SELECT pg_notify(n.channel, n.payload)
                 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS n(channel, payload, position)
                 ORDER BY n.position",
            )
            .bind(channels)
            .bind(payloads)
            .execute(&mut *open)
            .await;
            if let Err(error) = sent {
                // Readers re-read on their own tick: these hints cost latency only.
                tracing::warn!(%error, hints = batch.len(), "cannot send wake-up notifications; reconnecting");
                connection = None;
            }
        }
        tokio::time::sleep(WAKE_SPACING).await;
    }
}

/// Hints of committed work waiting to be announced together.
#[derive(Default)]
struct Coalesced {
    /// Each session's latest sequence, in the order sessions first appeared.
    latest: Vec<(SessionId, i64)>,
    index: HashMap<SessionId, usize>,
    all: bool,
    runs: bool,
}

impl Coalesced {
    fn add(&mut self, hint: &Hint) {
        match hint {
            Hint::Event(session, seq) => match self.index.get(session) {
                Some(at) => self.latest[*at].1 = self.latest[*at].1.max(*seq),
                None => {
                    self.index.insert(*session, self.latest.len());
                    self.latest.push((*session, *seq));
                }
            },
            Hint::Run => self.runs = true,
            Hint::All => self.all = true,
            Hint::Transient(_) => {}
        }
    }

    /// Appends the events and runs notifications, if any, and starts over.
    fn flush(&mut self, origin: Uuid, out: &mut Vec<(&'static str, String)>) {
        let taken = std::mem::take(self);
        if taken.all || !taken.latest.is_empty() {
            let mut payload = origin.to_string();
            let listed: String = taken
                .latest
                .iter()
                .map(|(session, seq)| format!("\n{session} {seq}"))
                .collect();
            if taken.all || payload.len() + listed.len() > MAX_PAYLOAD {
                payload.push_str("\n*");
            } else {
                payload.push_str(&listed);
            }
            out.push((EVENTS_CHANNEL, payload));
        }
        if taken.runs {
            out.push((RUNS_CHANNEL, origin.to_string()));
        }
    }
}

/// The notifications of a batch, in order: committed work between two transient notices is
/// coalesced into at most one events and one runs notification.
pub(crate) fn notifications(origin: Uuid, batch: &[Hint]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut pending = Coalesced::default();
    for hint in batch {
        match hint {
            Hint::Transient(payload) => {
                pending.flush(origin, &mut out);
                out.push((TRANSIENT_CHANNEL, payload.clone()));
            }
            other => pending.add(other),
        }
    }
    pending.flush(origin, &mut out);
    out
}

/// Reads an events or runs payload: its origin and its hints (`None` for another format).
pub fn parse(payload: &str) -> Option<(Uuid, Vec<Hint>)> {
    let mut lines = payload.lines();
    let origin = Uuid::try_parse(lines.next()?).ok()?;
    let hints = lines
        .filter_map(|line| match line {
            "*" => Some(Hint::All),
            line => {
                let (session, seq) = line.split_once(' ')?;
                Some(Hint::Event(SessionId::parse(session)?, seq.parse().ok()?))
            }
        })
        .collect();
    Some((origin, hints))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_becomes_one_notification_per_channel_with_each_sessions_latest_event() {
        let origin = Uuid::new_v4();
        let (a, b) = (
            SessionId::from_uuid(Uuid::new_v4()),
            SessionId::from_uuid(Uuid::new_v4()),
        );
        let batch = [
            Hint::Event(a, 3),
            Hint::Run,
            Hint::Event(b, 1),
            Hint::Event(a, 4),
            Hint::Run,
        ];
        let sent = notifications(origin, &batch);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[0].0, EVENTS_CHANNEL);
        assert_eq!(
            parse(&sent[0].1),
            Some((origin, vec![Hint::Event(a, 4), Hint::Event(b, 1)]))
        );
        assert_eq!((sent[1].0, parse(&sent[1].1)), (RUNS_CHANNEL, Some((origin, vec![]))));

        let many: Vec<Hint> = (0..500)
            .map(|seq| Hint::Event(SessionId::from_uuid(Uuid::new_v4()), seq))
            .collect();
        let sent = notifications(origin, &many);
        assert_eq!(sent.len(), 1);
        assert!(sent[0].1.len() < 8000);
        assert_eq!(parse(&sent[0].1), Some((origin, vec![Hint::All])));
        assert!(notifications(origin, &[]).is_empty());
    }

    #[test]
    fn a_transient_notice_keeps_its_place_between_the_steps_around_it() {
        let origin = Uuid::new_v4();
        let a = SessionId::from_uuid(Uuid::new_v4());
        let batch = [
            Hint::Event(a, 1),
            Hint::Transient("delta".into()),
            Hint::Event(a, 2),
            Hint::Event(a, 3),
        ];
        let sent = notifications(origin, &batch);
        let channels: Vec<&str> = sent.iter().map(|(channel, _)| *channel).collect();
        assert_eq!(channels, [EVENTS_CHANNEL, TRANSIENT_CHANNEL, EVENTS_CHANNEL]);
        assert_eq!(parse(&sent[0].1), Some((origin, vec![Hint::Event(a, 1)])));
        assert_eq!(sent[1].1, "delta");
        assert_eq!(parse(&sent[2].1), Some((origin, vec![Hint::Event(a, 3)])));
    }
}
