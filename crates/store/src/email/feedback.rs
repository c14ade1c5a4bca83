//! Email mode's feedback and learning controls (migration 0020), kept for the owner by the api
//! and applied by whoever records an assessment. Feedback is a rule (`domain::feedback`): it
//! applies at once to the conversation it was given on and to every later assessment it
//! matches, and what shows is recomputed from the classifier's own answer and the rules in
//! force, so an undo, a reset or an exclusion restores exactly that answer. Person and kind
//! rules are learning: none forms while learning is paused, and none forms from (or names) a
//! source the owner excluded; adding an exclusion retires the rules that came from it.

use domain::email::ExclusionKind;
use domain::feedback::{ContentKind, FeedbackScope, FeedbackSignal};
use domain::ids::{FeedbackId, ThreadId};
use jiff::Timestamp;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::email::Email;
use crate::{Result, StoreError, named, named_optional, timestamp};

/// One piece of feedback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedbackRow {
    pub id: FeedbackId,
    pub scope: FeedbackScope,
    pub signal: FeedbackSignal,
    /// The conversation it was given on.
    pub thread: ThreadId,
    pub person: Option<String>,
    pub kind: Option<ContentKind>,
    pub created_at: Timestamp,
    /// Undone, reset or excluded: it applies nowhere.
    pub retired_at: Option<Timestamp>,
}

const FEEDBACK_COLUMNS: &str = "f.id, f.scope, f.signal, f.thread, f.person, f.kind, f.created_at, f.retired_at";

#[derive(sqlx::FromRow)]
struct FeedbackRecord {
    id: Uuid,
    scope: String,
    signal: String,
    thread: Uuid,
    person: Option<String>,
    kind: Option<String>,
    created_at: jiff_sqlx::Timestamp,
    retired_at: Option<jiff_sqlx::Timestamp>,
}

impl TryFrom<FeedbackRecord> for FeedbackRow {
    type Error = StoreError;

    fn try_from(record: FeedbackRecord) -> Result<Self> {
        Ok(FeedbackRow {
            id: record.id.into(),
            scope: named(record.scope)?,
            signal: named(record.signal)?,
            thread: record.thread.into(),
            person: record.person,
            kind: named_optional(record.kind)?,
            created_at: timestamp(record.created_at),
            retired_at: record.retired_at.map(timestamp),
        })
    }
}

/// Feedback the owner gives on a conversation.
#[derive(Clone, Copy, Debug)]
pub struct NewFeedback<'a> {
    pub thread: ThreadId,
    pub scope: FeedbackScope,
    pub signal: FeedbackSignal,
    /// For a person's rule: the address the owner chose, one of the conversation's senders.
    pub person: Option<&'a str>,
}

/// What giving feedback came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GiveFeedback {
    Given(FeedbackRow),
    ThreadNotFound,
    /// A kind's rule needs the conversation's kind, which its assessment gives.
    Unassessed,
    /// A person's rule must name one of the conversation's senders (not the owner).
    NotASender,
    /// Learning is paused: only the conversation's own rule can be given.
    Paused,
    /// The conversation comes from an excluded sender or label: only its own rule can be given.
    Excluded,
}

/// A source never used for learning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExclusionRow {
    pub id: Uuid,
    /// A sender's (lowercased) address, or a provider label id.
    pub kind: ExclusionKind,
    pub value: String,
    pub created_at: Timestamp,
}

#[derive(sqlx::FromRow)]
struct ExclusionRecord {
    id: Uuid,
    #[sqlx(try_from = "String")]
    kind: ExclusionKind,
    value: String,
    created_at: jiff_sqlx::Timestamp,
}

impl From<ExclusionRecord> for ExclusionRow {
    fn from(record: ExclusionRecord) -> Self {
        ExclusionRow {
            id: record.id,
            kind: record.kind,
            value: record.value,
            created_at: timestamp(record.created_at),
        }
    }
}

/// The learning controls and what was learnt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearningRow {
    pub paused: bool,
    pub exclusions: Vec<ExclusionRow>,
    /// Person and kind rules in force, newest first.
    pub rules: Vec<FeedbackRow>,
    /// Wording endorsed as the owner's style and in force.
    pub style_samples: i64,
}

/// What a reset forgets.
#[derive(Clone, Copy, Debug)]
pub enum LearningReset<'a> {
    /// Every rule about this person (an address).
    Person(&'a str),
    /// Every rule about this kind of content.
    Kind(ContentKind),
    /// Every person and kind rule, and the endorsed writing style.
    Everything,
}

/// Whether a source of `thread` is excluded: one of its senders or labels.
const EXCLUDED: &str = "EXISTS (SELECT 1 FROM email_learning_exclusions x
         WHERE (x.kind = 'sender' AND x.value IN (SELECT lower(c->>'address') FROM jsonb_array_elements(t.correspondents) c))
            OR (x.kind = 'label' AND x.value = ANY (t.labels)))";

/// Recomputes what `thread` shows from the classifier's answer and the rules in force: for
/// importance and for reply need separately, the conversation's own rule, else a rule about one
/// of its senders, else one about its kind of content, the newest first within each.
pub(crate) async fn apply_rules(conn: &mut PgConnection, thread: Uuid) -> Result<()> {
    sqlx::query(
        "WITH t AS (SELECT id, kind, correspondents FROM email_threads WHERE id = $1 AND assessed_importance IS NOT NULL),
         rules AS (
             SELECT f.id, f.signal, f.created_at, CASE f.scope WHEN 'thread' THEN 0 WHEN 'person' THEN 1 ELSE 2 END AS rank
             FROM email_feedback f, t
             WHERE f.retired_at IS NULL
               AND ((f.scope = 'thread' AND f.thread = t.id)
                 OR (f.scope = 'person'
                     AND f.person IN (SELECT lower(c->>'address') FROM jsonb_array_elements(t.correspondents) c))
                 OR (f.scope = 'kind' AND f.kind = t.kind))),
         imp AS (SELECT id, signal FROM rules WHERE signal IN ('important', 'less_important')
                 ORDER BY rank, created_at DESC, id DESC LIMIT 1),
         rep AS (SELECT id, signal FROM rules WHERE signal IN ('needs_reply', 'no_reply')
                 ORDER BY rank, created_at DESC, id DESC LIMIT 1)
         UPDATE email_threads e SET
             importance = CASE (SELECT signal FROM imp) WHEN 'important' THEN 'important'
                          WHEN 'less_important' THEN 'other' ELSE e.assessed_importance END,
             reply_need = CASE (SELECT signal FROM rep) WHEN 'needs_reply' THEN 'needs_reply'
                          WHEN 'no_reply' THEN NULL ELSE e.assessed_reply_need END,
             importance_feedback = (SELECT id FROM imp),
             reply_feedback = (SELECT id FROM rep)
         FROM t WHERE e.id = t.id",
    )
    .bind(thread)
    .execute(conn)
    .await?;
    Ok(())
}

/// The advisory lock between retiring rules and recording assessments or giving feedback: these
/// hold it shared for their transaction ([`share_rules`]), a retirement exclusively. A retirement so
/// waits for assessments being recorded (it then recomputes what they decided) and is waited
/// for by those that begin meanwhile (they then read the rules without it). Without it, an
/// assessment decided by a rule in the instant it was retired kept showing that rule until its
/// next assessment. Advisory, because the async worker may not lock rule rows.
const LOCK_RULES: &str = "SELECT pg_advisory_xact_lock(hashtextextended('email_feedback_rules', 0))";

/// Holds the rules' lock ([`LOCK_RULES`]) shared until the transaction ends; taken before
/// anything else is locked.
pub(crate) async fn share_rules(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock_shared(hashtextextended('email_feedback_rules', 0))")
        .execute(conn)
        .await?;
    Ok(())
}

/// Retires the rules `ids` (`by` an undo, a reset or an exclusion) and recomputes every
/// conversation one of them decided, or was given on (in id order, so two retirements at once
/// lock them in one order). The transaction must hold no conversation's row yet: this first
/// waits for assessments being recorded ([`LOCK_RULES`]).
async fn retire(conn: &mut PgConnection, ids: &[Uuid], by: &str, now: jiff_sqlx::Timestamp) -> Result<u64> {
    if ids.is_empty() {
        return Ok(0);
    }
    sqlx::query(LOCK_RULES).execute(&mut *conn).await?;
    let retired = sqlx::query(
        "UPDATE email_feedback SET retired_at = $2, retired_by = $3 WHERE id = ANY ($1) AND retired_at IS NULL",
    )
    .bind(ids)
    .bind(now)
    .bind(by)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let threads: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM email_threads WHERE importance_feedback = ANY ($1) OR reply_feedback = ANY ($1)
         UNION SELECT thread FROM email_feedback WHERE id = ANY ($1) ORDER BY 1",
    )
    .bind(ids)
    .fetch_all(&mut *conn)
    .await?;
    for thread in threads {
        apply_rules(conn, thread).await?;
    }
    Ok(retired)
}

impl Email<'_> {
    /// Gives feedback on `new.thread` and applies it there at once.
    pub async fn give_feedback(self, new: NewFeedback<'_>) -> Result<GiveFeedback> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                // A retirement recomputing this conversation meanwhile would read the rules
                // without this one: it waits for this, or this for it.
                share_rules(conn).await?;
                #[derive(sqlx::FromRow)]
                struct Subject {
                    kind: Option<String>,
                    senders: Vec<String>,
                    owner: Option<String>,
                    excluded: bool,
                    paused: bool,
                }
                let subject: Option<Subject> = sqlx::query_as(&format!(
                    "SELECT t.kind, ARRAY(SELECT lower(c->>'address') FROM jsonb_array_elements(t.correspondents) c) AS senders,
                            lower(a.address) AS owner, {EXCLUDED} AS excluded,
                            (SELECT paused_at IS NOT NULL FROM email_learning) AS paused
                     FROM email_threads t JOIN email_accounts a ON a.account_id = t.account_id
                     WHERE t.id = $1 FOR UPDATE OF t"
                ))
                .bind(new.thread.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                let Some(subject) = subject else {
                    return Ok(GiveFeedback::ThreadNotFound);
                };
                let kind = subject.kind.as_deref().and_then(ContentKind::parse);
                let person = new.person.map(str::to_lowercase);
                match new.scope {
                    FeedbackScope::Thread => {}
                    _ if subject.paused => return Ok(GiveFeedback::Paused),
                    _ if subject.excluded => return Ok(GiveFeedback::Excluded),
                    FeedbackScope::Person => {
                        let named = person
                            .as_ref()
                            .is_some_and(|person| subject.senders.contains(person) && subject.owner.as_ref() != Some(person));
                        if !named {
                            return Ok(GiveFeedback::NotASender);
                        }
                    }
                    FeedbackScope::Kind if kind.is_none() => return Ok(GiveFeedback::Unassessed),
                    FeedbackScope::Kind => {}
                }
                let record: FeedbackRecord = sqlx::query_as(&format!(
                    "INSERT INTO email_feedback AS f (id, scope, signal, thread, person, kind, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {FEEDBACK_COLUMNS}"
                ))
                .bind(Uuid::now_v7())
                .bind(new.scope.as_str())
                .bind(new.signal.as_str())
                .bind(new.thread.as_uuid())
                .bind((new.scope == FeedbackScope::Person).then_some(person).flatten())
                .bind((new.scope == FeedbackScope::Kind).then_some(kind.map(ContentKind::as_str)).flatten())
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                apply_rules(conn, new.thread.as_uuid()).await?;
                if matches!(new.signal, FeedbackSignal::Important | FeedbackSignal::NeedsReply) {
                    // What the junk filter kept out and this rule covers (the conversation, the
                    // person's or the kind's) is protected now: it is assessed the ordinary way
                    // on the next refresh (the rule already shows on the conversation itself).
                    sqlx::query(
                        "UPDATE email_threads SET junk_state = 'restoring', suspected_spam = false
                         WHERE id IN (SELECT t.id FROM email_threads t WHERE t.junk_state = 'filtered'
                             AND (t.id = $1
                                  OR ($2::text IS NOT NULL AND t.correspondents
                                      @> jsonb_build_array(jsonb_build_object('address', $2::text)))
                                  OR ($3::text IS NOT NULL AND t.kind = $3))
                             ORDER BY t.id FOR UPDATE)",
                    )
                    .bind(new.thread.as_uuid())
                    .bind(record.person.as_deref())
                    .bind(record.kind.as_deref())
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(GiveFeedback::Given(record.try_into()?))
            },
            |outcome| matches!(outcome, GiveFeedback::Given(_)),
        )
        .await
    }

    /// Undoes a piece of feedback: it applies nowhere from now on, and what it decided is
    /// recomputed. `None` when there is no such feedback; an undone one is answered as it is.
    pub async fn undo_feedback(self, id: FeedbackId) -> Result<Option<FeedbackRow>> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                retire(conn, &[id.as_uuid()], "undo", now).await?;
                let record: Option<FeedbackRecord> = sqlx::query_as(&format!(
                    "SELECT {FEEDBACK_COLUMNS} FROM email_feedback f WHERE f.id = $1"
                ))
                .bind(id.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                record.map(FeedbackRow::try_from).transpose()
            },
            Option::is_some,
        )
        .await
    }

    /// The learning controls, the exclusions and the rules in force.
    pub async fn learning(self) -> Result<LearningRow> {
        let mut conn = self.pool.acquire().await?;
        let paused: bool = sqlx::query_scalar("SELECT paused_at IS NOT NULL FROM email_learning")
            .fetch_one(&mut *conn)
            .await?;
        let exclusions: Vec<ExclusionRecord> =
            sqlx::query_as("SELECT id, kind, value, created_at FROM email_learning_exclusions ORDER BY created_at, id")
                .fetch_all(&mut *conn)
                .await?;
        let rules: Vec<FeedbackRecord> = sqlx::query_as(&format!(
            "SELECT {FEEDBACK_COLUMNS} FROM email_feedback f
             WHERE f.retired_at IS NULL AND f.scope <> 'thread' ORDER BY f.created_at DESC, f.id DESC"
        ))
        .fetch_all(&mut *conn)
        .await?;
        let style_samples: i64 =
            sqlx::query_scalar("SELECT count(*) FROM email_style_samples WHERE retired_at IS NULL")
                .fetch_one(&mut *conn)
                .await?;
        Ok(LearningRow {
            paused,
            exclusions: exclusions.into_iter().map(ExclusionRow::from).collect(),
            rules: rules.into_iter().map(FeedbackRow::try_from).collect::<Result<_>>()?,
            style_samples,
        })
    }

    /// Pauses or resumes learning.
    pub async fn pause_learning(self, paused: bool) -> Result<()> {
        sqlx::query("UPDATE email_learning SET paused_at = CASE WHEN $1 THEN coalesce(paused_at, $2) END")
            .bind(paused)
            .bind(self.now_sql())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Forgets what `reset` names; how many rules (and style samples) it retired.
    pub async fn reset_learning(self, reset: LearningReset<'_>) -> Result<u64> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let (filter, value) = match reset {
                    LearningReset::Person(person) => {
                        ("f.scope = 'person' AND f.person = $1", Some(person.to_lowercase()))
                    }
                    LearningReset::Kind(kind) => ("f.scope = 'kind' AND f.kind = $1", Some(kind.as_str().to_owned())),
                    LearningReset::Everything => ("f.scope <> 'thread' AND $1::text IS NULL", None),
                };
                let ids: Vec<Uuid> = sqlx::query_scalar(&format!(
                    "SELECT f.id FROM email_feedback f WHERE f.retired_at IS NULL AND {filter}"
                ))
                .bind(value)
                .fetch_all(&mut *conn)
                .await?;
                let mut retired = retire(conn, &ids, "reset", now).await?;
                if matches!(reset, LearningReset::Everything) {
                    retired += sqlx::query("UPDATE email_style_samples SET retired_at = $1 WHERE retired_at IS NULL")
                        .bind(now)
                        .execute(&mut *conn)
                        .await?
                        .rows_affected();
                }
                Ok(retired)
            },
            |_| true,
        )
        .await
    }

    /// Excludes a source from learning (`sender`, a lowercased address, or `label`, a provider
    /// label id): the person and kind rules that came from its mail, or name it, are retired.
    /// Excluding it again answers the exclusion there is.
    pub async fn exclude_source(self, kind: ExclusionKind, value: &str) -> Result<ExclusionRow> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let record: ExclusionRecord = sqlx::query_as(
                    "INSERT INTO email_learning_exclusions (id, kind, value, created_at) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (kind, value) DO UPDATE SET kind = EXCLUDED.kind
                     RETURNING id, kind, value, created_at",
                )
                .bind(Uuid::now_v7())
                .bind(kind.as_str())
                .bind(value)
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                let ids: Vec<Uuid> = sqlx::query_scalar(&format!(
                    "SELECT f.id FROM email_feedback f JOIN email_threads t ON t.id = f.thread
                     WHERE f.retired_at IS NULL AND f.scope <> 'thread'
                       AND ({EXCLUDED} OR (f.scope = 'person' AND $1 = 'sender' AND f.person = $2))"
                ))
                .bind(kind.as_str())
                .bind(value)
                .fetch_all(&mut *conn)
                .await?;
                retire(conn, &ids, "exclusion", now).await?;
                Ok(record.into())
            },
            |_| true,
        )
        .await
    }

    /// Removes an exclusion (the retired rules stay retired); whether there was one.
    pub async fn remove_exclusion(self, id: Uuid) -> Result<bool> {
        let removed = sqlx::query("DELETE FROM email_learning_exclusions WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(removed == 1)
    }
}
