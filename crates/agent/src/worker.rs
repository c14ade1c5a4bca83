//! The worker role's loop: claim runs up to the concurrency limit, keep their leases alive
//! while executing, sweep overdue runs, and wake on `NOTIFY steward_runs` (with a polling
//! fallback, since a notification is only a hint).

use std::sync::Arc;
use std::time::Duration;

use domain::mail_tools::MailOperation;
use mail_mcp::tools::{MailService, Reconciliation};
use sqlx::postgres::PgListener;
use store::{ClaimedRun, Lease, Reconciled, Store};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::executor::{Executor, Stop, until};

/// How a worker runs: its name in leases, how many runs it executes at once, the lease length
/// (a dead worker's run resumes after it), and how uncertain mail is looked for.
#[derive(Clone, Debug)]
pub struct Settings {
    pub worker_id: String,
    pub concurrency: usize,
    pub lease_seconds: u32,
    pub reconcile: ReconcilePolicy,
}

/// How uncertain mail writes and sends are looked for: the first search at once, the n-th
/// `n × spacing_seconds` after the one before; after `attempts` searches without finding the
/// message it settles `not_found` (which proves nothing; the action is never repeated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconcilePolicy {
    pub attempts: u32,
    pub spacing_seconds: u32,
}

const POLL: Duration = Duration::from_secs(1);
const SWEEP: Duration = Duration::from_millis(500);
/// How often pending mail reconciliations are looked for; a new one is searched for at once.
const RECONCILE_POLL: Duration = Duration::from_secs(1);
/// How often, and after how long, a dispatch left on a finished run by a dead worker is settled
/// `outcome_unknown` (far longer than a dispatch can take: a token refresh and a request, each
/// bounded, twice after a 401).
const STRANDED_SWEEP: Duration = Duration::from_secs(60);
const STRANDED_AFTER_SECONDS: u32 = 900;

/// Runs the worker until `shutdown` resolves, then lets in-flight executions finish their
/// current run for up to the lease duration.
pub async fn run(config: Settings, executor: Executor, shutdown: impl std::future::Future<Output = ()>) {
    let wake = Arc::new(Notify::new());
    let listener = tokio::spawn(listen(executor.store.clone(), wake.clone()));
    let sweeper = tokio::spawn(sweep(executor.store.clone(), wake.clone()));
    let reconciler = executor
        .mail
        .clone()
        .map(|mail| tokio::spawn(reconcile(executor.store.clone(), mail, config.reconcile)));
    let slots = Arc::new(Semaphore::new(config.concurrency));
    let executor = Arc::new(executor);
    let mut running = JoinSet::new();
    tokio::pin!(shutdown);
    tracing::info!(worker = %config.worker_id, concurrency = config.concurrency, "worker started");
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit { Ok(permit) => permit, Err(_) => break },
            () = &mut shutdown => break,
        };
        match executor
            .store
            .work()
            .claim_run(&config.worker_id, config.lease_seconds)
            .await
        {
            Ok(Some(claimed)) => {
                let (executor, config) = (executor.clone(), config.clone());
                running.spawn(async move {
                    execute_with_lease(&executor, &config, claimed).await;
                    drop(permit);
                });
                continue;
            }
            Ok(None) => drop(permit),
            Err(error) => {
                drop(permit);
                tracing::warn!(%error, "cannot claim runs");
            }
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(POLL) => {}
            () = &mut shutdown => break,
        }
        while running.try_join_next().is_some() {}
    }
    tracing::info!("worker stopping");
    let drain = async { while running.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(u64::from(config.lease_seconds)), drain)
        .await
        .is_err()
    {
        tracing::warn!("runs still executing at shutdown are left to their leases; another worker resumes them");
    }
    listener.abort();
    sweeper.abort();
    if let Some(reconciler) = reconciler {
        reconciler.abort();
    }
}

/// Settles mail writes and sends of unknown outcome of the accounts this worker holds by
/// searching the mailbox (read-only, with the account's read document). A search the provider
/// could not answer does not count towards `not_found`. Never re-dispatches anything.
async fn reconcile(store: Store, mail: Arc<MailService>, policy: ReconcilePolicy) {
    let accounts = mail.account_ids();
    loop {
        match store
            .claim_due_reconciliations(8, policy.spacing_seconds, &accounts)
            .await
        {
            Ok(due) => {
                for item in due {
                    let Some(operation) = MailOperation::parse(&item.operation) else {
                        tracing::error!(invocation = %item.invocation_id, operation = %item.operation, "a mail reconciliation names an unknown operation; it is left for an operator");
                        continue;
                    };
                    let wanted = Reconciliation {
                        account_id: item.account_id.clone(),
                        operation,
                        invocation: item.invocation_id,
                        message_id: item.message_id.clone(),
                    };
                    let outcome = mail.reconcile(&wanted, item.dispatched_at).await;
                    if let Err(error) = &outcome {
                        tracing::warn!(invocation = %item.invocation_id, code = error.code(), "mail reconciliation search failed");
                    }
                    let settled = match &outcome {
                        Ok(Some(thread_id)) => Some(Reconciled::Found { thread_id }),
                        // An unreachable or busy provider is asked again and does not count; an
                        // empty search, or a refusal that waiting cannot change, does.
                        Err(error) if error.is_transient() => None,
                        Ok(None) | Err(_) => match store.record_search(&item).await {
                            Ok(searches) if searches >= policy.attempts => Some(Reconciled::NotFound),
                            Ok(_) => None,
                            Err(error) => {
                                tracing::warn!(%error, invocation = %item.invocation_id, "cannot count a mail reconciliation search");
                                None
                            }
                        },
                    };
                    if let Some(settled) = settled
                        && let Err(error) = store.settle_reconciliation(&item, settled).await
                    {
                        tracing::warn!(%error, invocation = %item.invocation_id, "cannot settle a mail reconciliation");
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot claim mail reconciliations"),
        }
        tokio::time::sleep(RECONCILE_POLL).await;
    }
}

/// Executes a claimed run while renewing its lease. Losing the lease or passing the deadline
/// raises the stop signal, which the executor honours at safe points: a model call is
/// abandoned, but a dispatched tool is always waited for and its outcome recorded.
/// Runs a claimed run inside its span (`run{run_id session_id attempt}`), so every line the run's
/// steps, model calls and tool dispatches log names it (as the API's line that queued it does).
async fn execute_with_lease(executor: &Executor, config: &Settings, claimed: ClaimedRun) {
    let span = tracing::info_span!(
        "run",
        run_id = %claimed.lease.run,
        session_id = %claimed.run.session_id,
        attempt = claimed.attempts
    );
    execute_claimed(executor, config, claimed).instrument(span).await;
}

async fn execute_claimed(executor: &Executor, config: &Settings, claimed: ClaimedRun) {
    let lease = claimed.lease.clone();
    let deadline = claimed.run.deadline_at;
    let run = lease.run;
    tracing::info!("executing run");
    let stop = Stop::default();
    let execution = executor.execute(claimed, &stop);
    tokio::pin!(execution);
    let keeper = keep_lease(&executor.store, &lease, config.lease_seconds);
    tokio::pin!(keeper);
    // Measured by the store's clock, which the deadline was set by.
    let timer = tokio::time::sleep(until(deadline, executor.store.now()));
    tokio::pin!(timer);
    let (mut watching_lease, mut watching_deadline) = (true, true);
    let outcome = loop {
        tokio::select! {
            outcome = &mut execution => break outcome,
            () = &mut keeper, if watching_lease => {
                watching_lease = false;
                stop.raise();
            }
            () = &mut timer, if watching_deadline => {
                watching_deadline = false;
                stop.raise();
                if let Err(error) = executor.store.work().expire_overdue_runs(16).await {
                    tracing::warn!(%error, %run, "cannot expire an overdue run");
                }
            }
        }
    };
    match outcome {
        Ok(finish) => tracing::info!(%run, ?finish, "run execution stopped"),
        // The lease runs out and another worker resumes from the persisted state.
        Err(error) => tracing::error!(%run, %error, "run execution failed; it will be resumed"),
    }
}

/// Renews the lease every third of its length; returns when it is lost.
async fn keep_lease(store: &Store, lease: &Lease, lease_seconds: u32) {
    let period = Duration::from_millis(u64::from(lease_seconds) * 1000 / 3);
    loop {
        tokio::time::sleep(period).await;
        match store.work().renew_lease(lease, lease_seconds).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => tracing::warn!(%error, run = %lease.run, "cannot renew a lease; retrying"),
        }
    }
}

async fn sweep(store: Store, wake: Arc<Notify>) {
    let mut stranded_sweep = tokio::time::Instant::now();
    loop {
        if stranded_sweep.elapsed() >= STRANDED_SWEEP {
            stranded_sweep = tokio::time::Instant::now();
            match store
                .work()
                .settle_stranded_dispatches(STRANDED_AFTER_SECONDS, 16)
                .await
            {
                Ok(0) => {}
                Ok(settled) => tracing::warn!(
                    settled,
                    "settled dispatches stranded on finished runs as outcome unknown"
                ),
                Err(error) => tracing::warn!(%error, "cannot sweep stranded dispatches"),
            }
        }
        match store.work().expire_overdue_runs(64).await {
            Ok(0) => {}
            Ok(expired) => {
                tracing::info!(expired, "cancelled runs past their deadline");
                wake.notify_one();
            }
            Err(error) => tracing::warn!(%error, "cannot sweep overdue runs"),
        }
        tokio::time::sleep(SWEEP).await;
    }
}

/// Wakes the claim loop when a run becomes claimable: at once for this process's commits, by
/// the other processes' coalesced notifications otherwise.
async fn listen(store: Store, wake: Arc<Notify>) {
    tokio::join!(
        listen_local(store.subscribe_wakes(), wake.clone()),
        listen_remote(store, wake)
    );
}

async fn listen_local(mut hints: tokio::sync::broadcast::Receiver<store::Hint>, wake: Arc<Notify>) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match hints.recv().await {
            Ok(store::Hint::Run) | Err(RecvError::Lagged(_)) => wake.notify_one(),
            Ok(_) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

async fn listen_remote(store: Store, wake: Arc<Notify>) {
    let origin = store.wake_origin();
    loop {
        // Without the listener, runs are still found by polling: a lost wake-up costs latency.
        let mut listener = match PgListener::connect_with(store.pool()).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for new runs; polling meanwhile");
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        if let Err(error) = listener.listen(store::RUNS_CHANNEL).await {
            tracing::warn!(%error, "cannot listen for new runs; polling meanwhile");
            tokio::time::sleep(POLL).await;
            continue;
        }
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    // This process's own commits woke it in process already.
                    let own = store::parse_wake_payload(notification.payload()).is_some_and(|(from, _)| from == origin);
                    if !own {
                        wake.notify_one();
                    }
                }
                // The connection was lost and is re-established by the next receive.
                Ok(None) => wake.notify_one(),
                Err(error) => {
                    tracing::warn!(%error, "lost the run listener; reconnecting");
                    break;
                }
            }
        }
    }
}
