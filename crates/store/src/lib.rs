//! PostgreSQL storage: the migrator, the connection pool and one repository module per resource.
//!
//! Every statement here is exercised by a test against a real PostgreSQL server.

/// Binds a run's limits (`domain::run::RunLimits`) to `$query`, in the order the `runs` and
/// `schedules` columns take them: `max_steps`, `max_model_calls`, `max_tool_calls`,
/// `max_cost_micros`, `run_timeout_seconds`. (A macro: the query may be a `Query` or a `QueryAs`.)
macro_rules! bind_limits {
    ($query:expr, $limits:expr) => {{
        let limits: &domain::run::RunLimits = $limits;
        $query
            .bind(crate::signed(limits.max_steps))
            .bind(crate::signed(limits.max_model_calls))
            .bind(crate::signed(limits.max_tool_calls))
            .bind(limits.max_cost.micros())
            .bind(crate::signed(limits.run_timeout_seconds))
    }};
}

mod approvals;
mod artifacts;
mod browser;
mod call_receipts;
mod calls;
mod clock;
mod delivery;
pub mod email;
mod ending;
mod events;
mod folder_proposals;
mod folders;
mod idempotency;
mod invocations;
mod mail;
pub mod memory;
mod model_settings;
mod notes;
mod notifications;
pub mod people;
pub mod people_imports;
pub mod policies;
pub mod retention;
mod runs;
mod schedules;
mod scheduling;
pub mod sealed;
mod sessions;
mod wake;
mod web_sessions;
mod work;

pub use approvals::{Answer, ApprovalRow, Decide, Decision};
pub use artifacts::{ArtifactRow, ArtifactUpload, NewArtifact};
pub use browser::{BrowserProfileRow, CeremonyRow, ProfileState, RecordCeremony, TaskPermissionRow};
pub use call_receipts::{CALL_RECEIPTS_CHANNEL, Receipt};
pub use calls::{
    CallResult, CallRow, CancelCall, DeleteCall, DispatchOutcome, OutboundDue, REDACTED_REPLY, ReceiptDue, Redaction,
    Reserve, RunningCall, Settled, UncertainCall,
};
pub use clock::{Clock, SystemClock};
pub use delivery::{DeviceTarget, DueNotification, PushAddress, ScheduleOutcome};
pub use email::{
    CensusCandidate, CensusEntry, ClaimedProposal, ClaimedUnsubscribe, ClaimedWrite, ConfirmedTarget, DraftContent,
    DraftPlace, DraftRevision, DraftRow, DraftSend, Email, EmailAccountRow, EmailMessageRow, EmailOperationRow,
    EndorseStyle, ExclusionRow, FeedbackRow, Filtering, Freeze, GiveFeedback, INTERRUPTED, InboxPosition, InboxQuery,
    JunkFacts, JunkFiltered, JunkRequest, JunkStatus, Landing, LearningReset, LearningRow, NOT_APPLIED, NewAssessment,
    NewEmailMessage, NewFeedback, NewJudgment, OwnerChange, Reconciliation, RefreshRequest, ReplayCandidate,
    RequestProposal, ReviewDraft, STILL_SENDING_AFTER, SaveDraft, StyleSampleRow, SubscriptionChange,
    SubscriptionQuery, SubscriptionRow, THREAD_GONE, TargetOutcome, TargetRefused, ThreadSummary, UnsubscribeRequest,
    UnsubscribeTargetRow, WaitingThread, WriteOutcome, WriteRequest,
};
pub use events::{EventRow, StoredFrame};
pub use folder_proposals::{
    AcceptProposal, DeclineProposal, FilingOverview, FolderProposalRow, LeftOut, MAX_PENDING_PROPOSALS, ProposalTarget,
    Propose,
};
pub use folders::{FolderRow, RenameFolder};
pub use idempotency::{IdempotencyClaim, Prior, StoredResponse};
pub use invocations::InvocationRow;
pub use mail::{DueReconciliation, NewReconciliation, Reconciled};
pub use notifications::{DeviceRow, NotificationRow};
pub use runs::{CancelRun, NewMessage, RunRow, Submit};
pub use schedules::{CancelSchedule, CreateSchedule, NewSchedule, OccurrenceRow, ScheduleRow};
pub use scheduling::{AUTHORIZATION_FAILED, Firing, INVALID_CADENCE, MISFIRE};
pub use sessions::{DeleteSession, FileSession, NewSession, SessionPage, SessionRow};
pub use wake::{
    EVENTS_CHANNEL, Hint, RUNS_CHANNEL, TRANSIENT_CHANNEL, WAKE_SPACING, Wakes, parse as parse_wake_payload,
};
pub use web_sessions::{NewWebSession, WebSessionRow};
pub use work::{ClaimedRun, Cover, Dispatch, Lease, ModelStep, NewCall, RunCounters, RunKind, SessionBrowser, Work};

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// The schema migrations, embedded at compile time from `migrations/`.
pub static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Errors that are not an expected outcome of an operation.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
    #[error("a response cannot be encoded: {0}")]
    Encode(serde_json::Error),
}

impl StoreError {
    /// Whether the database could not be reached (refused, reset, gone mid-query, shutting
    /// down, no connection within the pool's wait): worth retrying later, unlike any other error.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Database(
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_),
            ) => true,
            // SQLSTATE class 08 (connection exception), 57P01–57P03 (the server is shutting down
            // or starting).
            StoreError::Database(sqlx::Error::Database(error)) => error
                .code()
                .is_some_and(|code| code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")),
            _ => false,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A handle on the database and the clock run timing is measured by, cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: PgPool,
    clock: std::sync::Arc<dyn Clock>,
    wakes: std::sync::Arc<Wakes>,
}

/// Where a role's database is: `DATABASE_URL` (checked without repeating it: the URL may hold a
/// password) and `DATABASE_MAX_CONNECTIONS`, the pool's size. Every role reads them here.
#[derive(Clone, Debug)]
pub struct Database {
    pub options: PgConnectOptions,
    pub max_connections: u32,
}

impl Database {
    /// Reads the database settings; `default_pool` is the role's pool size when unset.
    pub fn from_env(env: &domain::env::Env, default_pool: u32) -> Result<Database, domain::env::EnvError> {
        Ok(Database {
            options: Database::url_from_env(env)?,
            max_connections: env.positive("DATABASE_MAX_CONNECTIONS", default_pool)?,
        })
    }

    /// `DATABASE_URL` alone, for a tool that opens single connections (the migrator).
    pub fn url_from_env(env: &domain::env::Env) -> Result<PgConnectOptions, domain::env::EnvError> {
        // sqlx's messages never repeat the URL.
        env.required("DATABASE_URL")?
            .parse::<PgConnectOptions>()
            .map_err(|error| domain::env::invalid("DATABASE_URL", error.to_string()))
    }

    /// A store on a pool that opens connections on first use (see [`Store::connect_lazy`]).
    pub fn connect_lazy(&self) -> Store {
        Store::from_pool(Store::lazy_pool(self.options.clone(), self.max_connections))
    }
}

/// How long a pooled connection may sit idle before it is checked at its next acquire.
const CHECK_IDLE_CONNECTIONS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Store {
    /// Connects lazily: the pool opens connections on first use, so a role can start (and report
    /// not-ready) while the database is still coming up.
    pub fn connect_lazy(url: &str, max_connections: u32) -> Result<Store> {
        let options: PgConnectOptions = url.parse()?;
        Ok(Store::from_pool(Store::lazy_pool(options, max_connections)))
    }

    fn lazy_pool(options: PgConnectOptions, max_connections: u32) -> PgPool {
        PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(std::time::Duration::from_secs(5))
            // A connection is checked (a round trip) only when it sat idle for a second or more:
            // one in steady use is alive, and checking each acquire cost a quarter of the submit
            // rate. A server that went away leaves every connection idle past that by the time
            // it is back, so each is checked and replaced before use as before.
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    if meta.idle_for >= CHECK_IDLE_CONNECTIONS_AFTER {
                        sqlx::Connection::ping(connection).await?;
                    }
                    Ok(true)
                })
            })
            .connect_lazy_with(options)
    }

    pub fn from_pool(pool: PgPool) -> Store {
        Store {
            pool,
            clock: std::sync::Arc::new(SystemClock),
            wakes: std::sync::Arc::new(Wakes::new(false)),
        }
    }

    /// The same store sending no wake-up hints at all, in process or by `NOTIFY`: readers then
    /// rely on their re-reads alone (tests of those paths, and diagnosis).
    pub fn without_wakes(self) -> Store {
        Store {
            wakes: std::sync::Arc::new(Wakes::new(true)),
            ..self
        }
    }

    /// This process's wake-up hints from this store, as its transactions commit.
    pub fn subscribe_wakes(&self) -> tokio::sync::broadcast::Receiver<Hint> {
        self.wakes.subscribe()
    }

    /// Sends a worker's transient notice (JSON of a `wire::event::TransientNotice`) to other
    /// processes, in order with this store's wake-ups: a delta published before a step commits
    /// is announced before that step.
    pub fn publish_transient(&self, payload: String) {
        self.wakes.publish(&self.pool, vec![Hint::Transient(payload)]);
    }

    /// The origin this store's notifications carry, so a listener can skip its own.
    pub fn wake_origin(&self) -> uuid::Uuid {
        self.wakes.origin()
    }

    /// The same store measuring run timing and push delays by `clock` (tests move time on).
    pub fn with_clock(self, clock: std::sync::Arc<dyn Clock>) -> Store {
        Store { clock, ..self }
    }

    /// The current instant by this store's clock: what deadlines are compared with.
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// [`Store::now`] as bound into a statement.
    fn now_sql(&self) -> jiff_sqlx::Timestamp {
        jiff_sqlx::Timestamp::from(self.clock.now())
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Whether the database answers and holds exactly the migrations this build knows, all
    /// applied successfully with matching checksums.
    pub async fn migrations_current(&self) -> Result<bool> {
        let applied: Vec<(i64, bool, Vec<u8>)> =
            match sqlx::query_as("SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version")
                .fetch_all(&self.pool)
                .await
            {
                Ok(rows) => rows,
                // No migration table at all: reachable, but never migrated.
                Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("42P01") => return Ok(false),
                Err(error) => return Err(error.into()),
            };
        let known: Vec<_> = MIGRATOR.iter().filter(|m| m.migration_type.is_up_migration()).collect();
        Ok(applied.len() == known.len()
            && applied
                .iter()
                .zip(&known)
                .all(|((version, success, checksum), migration)| {
                    *success && *version == migration.version && checksum.as_slice() == migration.checksum.as_ref()
                }))
    }
}

impl Store {
    /// Runs `work` in a transaction, committing when `commit_if` approves its outcome and rolling
    /// back explicitly otherwise (also on error). A merely dropped transaction only queues its
    /// rollback for when the connection is next used, so its locks would outlive the request.
    ///
    /// Lock order, kept by every caller so transactions never deadlock: a run, then its
    /// approvals, questions and invocations, then its session (which every event append locks).
    async fn transaction<T>(
        &self,
        work: impl AsyncFnOnce(&mut sqlx::PgConnection) -> Result<T>,
        commit_if: impl FnOnce(&T) -> bool,
    ) -> Result<T> {
        // Wake-up hints raised by the work are published only once it has committed.
        let (outcome, hints) = wake::collecting(async {
            let mut tx = self.pool.begin().await?;
            match work(&mut tx).await {
                Ok(outcome) if commit_if(&outcome) => {
                    tx.commit().await?;
                    Ok((outcome, true))
                }
                Ok(outcome) => {
                    tx.rollback().await?;
                    Ok((outcome, false))
                }
                Err(error) => {
                    let _ = tx.rollback().await;
                    Err(error)
                }
            }
        })
        .await;
        let (outcome, committed) = outcome?;
        if committed {
            self.wakes.publish(&self.pool, hints);
        }
        Ok(outcome)
    }
}

/// A stored name of a closed set (`domain::email`, `domain::feedback`, …); any other text is
/// corruption, never a default.
fn named<T: TryFrom<String, Error = domain::names::UnknownName>>(text: String) -> Result<T> {
    T::try_from(text).map_err(|unknown| StoreError::Corrupt(unknown.to_string()))
}

/// A stored name read by `parse` (a core type's), or corruption naming `what` it was meant to
/// be and the text.
fn parsed<T>(what: &str, text: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<T> {
    parse(text).ok_or_else(|| StoreError::Corrupt(format!("{what} `{text}`")))
}

/// [`named`], of a column that may be null.
fn named_optional<T: TryFrom<String, Error = domain::names::UnknownName>>(text: Option<String>) -> Result<Option<T>> {
    text.map(named).transpose()
}

/// The one row `sql` selects by `$1`, an id, and `$2`, the principal that must own it; `None`
/// when there is none (or it is someone else's).
async fn owned_row<'c>(
    executor: impl sqlx::PgExecutor<'c>,
    sql: &str,
    id: uuid::Uuid,
    principal: &domain::ids::PrincipalId,
) -> Result<Option<sqlx::postgres::PgRow>> {
    let row = sqlx::query(sql)
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(executor)
        .await?;
    Ok(row)
}

/// A count or a number of seconds as its `integer` column holds it (at most `i32::MAX`).
fn signed(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// `columns` (a listing's column list, `, ` apart) each prefixed with a table alias.
fn prefixed(columns: &str, alias: &str) -> String {
    columns
        .split(", ")
        .map(|column| format!("{alias}.{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn timestamp(value: jiff_sqlx::Timestamp) -> jiff::Timestamp {
    value.to_jiff()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unknown_stored_name_is_corruption_never_a_default() {
        use domain::email::{EmailOperationState, ReplyNeed};
        let refused = super::named::<EmailOperationState>("settled".to_owned()).expect_err("unknown");
        assert!(
            matches!(&refused, super::StoreError::Corrupt(text) if text.contains("`settled`")),
            "{refused:?}"
        );
        assert_eq!(super::named_optional::<ReplyNeed>(None).expect("null"), None);
        assert!(super::named_optional::<ReplyNeed>(Some("maybe".to_owned())).is_err());
    }

    use std::collections::{BTreeMap, BTreeSet};

    /// Each module of this crate with the sibling modules it names (`crate::<module>`).
    fn module_imports() -> BTreeMap<String, BTreeSet<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let sources: BTreeMap<String, String> = std::fs::read_dir(&dir)
            .expect("src")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
            .map(|path| {
                let name = path.file_stem().expect("stem").to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&path).expect("read"))
            })
            .filter(|(name, _)| name != "lib")
            .collect();
        sources
            .iter()
            .map(|(name, text)| {
                let named = sources
                    .keys()
                    .filter(|other| *other != name && text.contains(&format!("crate::{other}")))
                    .cloned()
                    .collect();
                (name.clone(), named)
            })
            .collect()
    }

    #[test]
    fn runs_end_in_one_place_and_no_modules_import_each_other_in_a_circle() {
        let imports = module_imports();
        // Depth-first search for a cycle.
        fn visit(
            module: &str,
            imports: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) {
            if let Some(start) = path.iter().position(|seen| seen == module) {
                panic!("modules import each other in a circle: {}", path[start..].join(" → "));
            }
            if done.contains(module) {
                return;
            }
            path.push(module.to_owned());
            for next in imports.get(module).into_iter().flatten() {
                visit(next, imports, path, done);
            }
            path.pop();
            done.insert(module.to_owned());
        }
        let mut done = BTreeSet::new();
        for module in imports.keys() {
            visit(module, &imports, &mut Vec::new(), &mut done);
        }
        // Only `ending` writes a run's terminal state.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for module in imports.keys().filter(|module| *module != "ending") {
            let text = std::fs::read_to_string(dir.join(format!("{module}.rs"))).expect("read");
            for terminal in ["'completed'", "'failed'", "'cancelled'"] {
                let writes = text.match_indices("UPDATE runs").any(|(at, _)| {
                    text[at..]
                        .split(';')
                        .next()
                        .is_some_and(|statement| statement.contains(&format!("state = {terminal}")))
                });
                assert!(!writes, "{module} ends runs itself ({terminal}); only `ending` does");
            }
        }
    }
}
