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

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use domain::ids::SessionId;
use sqlx::PgPool;
use tokio::sync::{broadcast, mpsc};
use uuid::Uuid;

/// The notification channel of committed events.
pub const EVENTS_CHANNEL: &str = "steward_events";

/// The notification channel that wakes workers.
pub const RUNS_CHANNEL: &str = "steward_runs";

/// The least time between two notifications of the notifier.
pub const WAKE_SPACING: Duration = Duration::from_millis(5);

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
            let _ = self.local.send(hint.clone());
            let _ = notifier.send(hint);
        }
    }
}

/// The notifier: the first hint after a pause goes out at once; hints arriving while it waits
/// out [`WAKE_SPACING`] go out together in the next notification.
async fn notify(pool: PgPool, origin: Uuid, mut hints: mpsc::UnboundedReceiver<Hint>) {
    while let Some(first) = hints.recv().await {
        let mut batch = vec![first];
        while let Ok(hint) = hints.try_recv() {
            batch.push(hint);
        }
        let (events, runs) = payloads(origin, &batch);
        let sent = sqlx::query(
            "SELECT pg_notify(channel, payload) FROM unnest($1::text[], $2::text[]) AS n(channel, payload)",
        )
        .bind(
            [
                events.as_ref().map(|_| EVENTS_CHANNEL),
                runs.as_ref().map(|_| RUNS_CHANNEL),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
        )
        .bind([events, runs].into_iter().flatten().collect::<Vec<_>>())
        .execute(&pool)
        .await;
        if let Err(error) = sent {
            // Readers re-read on their own tick: these hints cost latency only.
            tracing::warn!(%error, hints = batch.len(), "cannot send wake-up notifications");
        }
        tokio::time::sleep(WAKE_SPACING).await;
    }
}

/// The events and runs payloads of a batch (`None` when it has nothing for that channel).
pub(crate) fn payloads(origin: Uuid, batch: &[Hint]) -> (Option<String>, Option<String>) {
    let mut latest: Vec<(SessionId, i64)> = Vec::new();
    let mut all = false;
    let mut runs = false;
    for hint in batch {
        match hint {
            Hint::Event(session, seq) => match latest.iter_mut().find(|(known, _)| known == session) {
                Some((_, known)) => *known = (*known).max(*seq),
                None => latest.push((*session, *seq)),
            },
            Hint::Run => runs = true,
            Hint::All => all = true,
        }
    }
    let events = (all || !latest.is_empty()).then(|| {
        let mut payload = origin.to_string();
        let listed: String = latest
            .iter()
            .map(|(session, seq)| format!("\n{session} {seq}"))
            .collect();
        if all || payload.len() + listed.len() > MAX_PAYLOAD {
            payload.push_str("\n*");
        } else {
            payload.push_str(&listed);
        }
        payload
    });
    (events, runs.then(|| origin.to_string()))
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
    fn a_batch_becomes_one_payload_per_channel_with_each_sessions_latest_event() {
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
        let (events, runs) = payloads(origin, &batch);
        let (from, hints) = parse(&events.expect("events")).expect("parses");
        assert_eq!((from, hints), (origin, vec![Hint::Event(a, 4), Hint::Event(b, 1)]));
        assert_eq!(parse(&runs.expect("runs")), Some((origin, vec![])));

        let many: Vec<Hint> = (0..500)
            .map(|seq| Hint::Event(SessionId::from_uuid(Uuid::new_v4()), seq))
            .collect();
        let (events, runs) = payloads(origin, &many);
        let events = events.expect("events");
        assert!(events.len() < 8000);
        assert_eq!(parse(&events), Some((origin, vec![Hint::All])));
        assert_eq!(runs, None);
        assert_eq!(payloads(origin, &[]), (None, None));
    }
}
