//! The junk first pass's storage (migration 0026), kept by the async worker: content-free
//! judgments of newly eligible mail, the filter's decision on a thread, the pilot's daily
//! allowance, the journal of the first pass's model requests, and the mode in force per account.
//!
//! A filtered thread's assessment is the filter's (Other, no reply need); it becomes
//! `restoring` when the decision no longer holds, and the next bounded refresh assesses it the
//! ordinary way ([`Email::waiting_threads`] lists it, `record_assessment` clears the state).

use domain::email::Importance;
use domain::feedback::ContentKind;
use domain::ids::{AccountId, ThreadId};
use domain::junk::{JunkCategory, JunkMode, JunkOutcome, JunkReason, PILOT_DAILY_CONVERSATIONS, Protection};
use uuid::Uuid;

use crate::email::Email;
use crate::email::projection::NewAssessment;
use crate::{Result, named_optional};

/// What the store knows that may protect a thread's newest message from the first pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JunkFacts {
    /// The message already has a judgment: it is not newly eligible.
    pub judged: bool,
    /// The owner keeps the sender's subscription.
    pub kept_subscription: bool,
    /// A rule of the owner's in force marks the conversation or the sender Important.
    pub important: bool,
    /// A rule of the owner's in force says the conversation or the sender needs a reply.
    pub needs_reply: bool,
    /// The owner said Not spam of this conversation, or of another from the same sender.
    pub not_spam: bool,
    /// The pilot already keeps the conversation out of the priority inbox (admitted: refreshing
    /// it uses no slot).
    pub admitted: bool,
}

/// One judgment to record (never content).
#[derive(Clone, Copy, Debug)]
pub struct NewJudgment<'a> {
    pub account_id: &'a AccountId,
    pub thread: ThreadId,
    pub provider_message_id: &'a str,
    pub fingerprint: &'a str,
    pub mode: JunkMode,
    pub policy: &'a str,
    pub model: &'a str,
    /// The category and its probability; `None` when the message was not judged.
    pub judgment: Option<(JunkCategory, f64)>,
    pub protection: Option<Protection>,
    pub outcome: JunkOutcome,
}

/// What recording the filter's decision came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filtering {
    /// The thread is kept out of the priority inbox.
    Filtered,
    /// Pilot: the day's allowance of new conversations is used; assess it the ordinary way.
    NoSlot,
    /// A newer message arrived, or the thread was assessed meanwhile: nothing recorded.
    Moved,
    /// The owner protected it while it was being judged (recorded): assess it the ordinary way.
    Protected,
}

/// A filtered thread, as its row explains it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JunkFiltered {
    pub category: JunkCategory,
    pub probability: f64,
    pub mode: JunkMode,
}

/// One model request of the first pass, as its journal records it.
#[derive(Clone, Copy, Debug)]
pub struct JunkRequest<'a> {
    pub request: Uuid,
    /// `judgment` or `calibration`.
    pub purpose: &'a str,
    pub account_id: &'a AccountId,
    pub ceiling_micros: i64,
}

/// The mode in force on an account, as the async worker last found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JunkStatus {
    pub configured: JunkMode,
    pub in_force: JunkMode,
    pub reason: Option<JunkReason>,
}

/// Whether a rule of the owner's in force with `signal` applies to the thread `t`, to `$2` (its
/// sender) or to `$3` (the kind of content of its newest message).
fn owner_rule(signal: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM email_feedback f WHERE f.retired_at IS NULL AND f.signal = '{signal}'
             AND ((f.scope = 'thread' AND f.thread = t.id) OR (f.scope = 'person' AND f.person = $2)
                  OR (f.scope = 'kind' AND f.kind = $3)))"
    )
}

/// The owner's protections of the thread `t` whose newest message is from `$2` and of kind
/// `$3`, as columns: kept subscription, Important, Needs reply, Not spam.
fn owner_protections() -> String {
    format!(
        "EXISTS (SELECT 1 FROM email_subscriptions s WHERE s.account_id = t.account_id
                 AND s.sender = $2 AND s.decision = 'kept'),
         {important}, {needs_reply},
         t.not_spam_at IS NOT NULL OR EXISTS (SELECT 1 FROM email_threads o
             WHERE o.account_id = t.account_id AND o.not_spam_at IS NOT NULL
               AND o.correspondents @> jsonb_build_array(jsonb_build_object('address', $2::text)))",
        important = owner_rule("important"),
        needs_reply = owner_rule("needs_reply"),
    )
}

/// The first protection of four columns of [`owner_protections`].
fn first_protection(kept: bool, important: bool, needs_reply: bool, not_spam: bool) -> Option<Protection> {
    [
        (kept, Protection::KeptSubscription),
        (important, Protection::Important),
        (needs_reply, Protection::NeedsReply),
        (not_spam, Protection::NotSpam),
    ]
    .into_iter()
    .find_map(|(holds, protection)| holds.then_some(protection))
}

/// A conversation the calibration tool may replay: its newest message.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayCandidate {
    pub account_id: AccountId,
    pub thread: ThreadId,
    pub message: crate::email::EmailMessageRow,
}

#[derive(sqlx::FromRow)]
struct CandidateRecord {
    account_id: String,
    thread: uuid::Uuid,
    #[sqlx(flatten)]
    message: crate::email::projection::MessageRecord,
}

impl Email<'_> {
    /// Up to `limit` conversations (of `account_id`, else of every account) whose newest
    /// message arrived after `since` (in the Inbox only, with `inbox_only`), newest first.
    pub async fn replay_candidates(
        self,
        account_id: Option<&AccountId>,
        since: jiff::Timestamp,
        inbox_only: bool,
        limit: i64,
    ) -> Result<Vec<ReplayCandidate>> {
        let records: Vec<CandidateRecord> = sqlx::query_as(&format!(
            "SELECT t.account_id, t.id AS thread, m.* FROM email_threads t
             CROSS JOIN LATERAL (SELECT {columns} FROM email_messages WHERE thread = t.id
                                 ORDER BY sent_at DESC, provider_message_id DESC LIMIT 1) m
             WHERE ($1::text IS NULL OR t.account_id = $1) AND t.latest_at > $2 AND (NOT $3 OR t.in_inbox)
             ORDER BY t.latest_at DESC, t.id DESC LIMIT $4",
            columns = crate::email::projection::MESSAGE_COLUMNS,
        ))
        .bind(account_id.map(AccountId::as_str))
        .bind(jiff_sqlx::Timestamp::from(since))
        .bind(inbox_only)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        records
            .into_iter()
            .map(|record| {
                Ok(ReplayCandidate {
                    account_id: record.account_id.into(),
                    thread: record.thread.into(),
                    message: record.message.try_into()?,
                })
            })
            .collect()
    }

    /// What may protect `thread`'s newest message (`provider_message_id`, from `sender`, of
    /// content `kind`).
    pub async fn junk_facts(
        self,
        thread: ThreadId,
        provider_message_id: &str,
        sender: Option<&str>,
        kind: ContentKind,
    ) -> Result<JunkFacts> {
        let row: Option<(bool, bool, bool, bool, bool, bool)> = sqlx::query_as(&format!(
            "SELECT
                 EXISTS (SELECT 1 FROM email_junk_judgments j WHERE j.account_id = t.account_id
                         AND j.provider_message_id = $4),
                 {protections},
                 t.junk_state IS NOT DISTINCT FROM 'filtered' AND t.junk_mode IS NOT DISTINCT FROM 'pilot'
             FROM email_threads t WHERE t.id = $1",
            protections = owner_protections(),
        ))
        .bind(thread.as_uuid())
        .bind(sender.unwrap_or_default())
        .bind(kind.as_str())
        .bind(provider_message_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map_or_else(JunkFacts::default, |facts| JunkFacts {
            judged: facts.0,
            kept_subscription: facts.1,
            important: facts.2,
            needs_reply: facts.3,
            not_spam: facts.4,
            admitted: facts.5,
        }))
    }

    /// Records a judgment that changes nothing on the thread (shadow, protected, kept, no
    /// slot); false when the message already had one.
    pub async fn record_judgment(self, judgment: &NewJudgment<'_>) -> Result<bool> {
        Ok(insert_judgment(&mut *self.pool.acquire().await?, judgment, self.now_sql()).await?)
    }

    /// Keeps `judgment.thread` out of the priority inbox: records `assessment` (Other, no reply
    /// need) with the filter's reason, unless a newer message arrived or the thread was assessed
    /// meanwhile. The owner's protections are read again under the thread's lock (a rule or a
    /// Not spam given while the message was being judged protects it: `protected`, recorded).
    /// In `pilot` mode a conversation not yet admitted takes one of the UTC day's slots first
    /// (`day`); without one nothing changes but the judgment (`no_slot`). `sender` is the
    /// message's.
    pub async fn record_filtered(
        self,
        judgment: &NewJudgment<'_>,
        assessment: &NewAssessment<'_>,
        sender: Option<&str>,
        day: jiff::civil::Date,
    ) -> Result<Filtering> {
        let Some((category, probability)) = judgment.judgment else {
            return Ok(Filtering::Moved);
        };
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                crate::email::feedback::share_rules(conn).await?;
                let thread: Option<(Option<String>, Option<String>)> = sqlx::query_as(
                    "SELECT t.junk_state, t.junk_mode FROM email_threads t
                     WHERE t.id = $1 AND (t.importance IS NULL OR t.junk_state = 'restoring')
                       AND $2 = (SELECT provider_message_id FROM email_messages WHERE thread = t.id
                                 ORDER BY sent_at DESC, provider_message_id DESC LIMIT 1)
                     FOR UPDATE",
                )
                .bind(judgment.thread.as_uuid())
                .bind(judgment.provider_message_id)
                .fetch_optional(&mut *conn)
                .await?;
                let Some((state, mode)) = thread else {
                    return Ok(Filtering::Moved);
                };
                let (kept, important, needs_reply, not_spam): (bool, bool, bool, bool) = sqlx::query_as(&format!(
                    "SELECT {protections} FROM email_threads t WHERE t.id = $1",
                    protections = owner_protections(),
                ))
                .bind(judgment.thread.as_uuid())
                .bind(sender.unwrap_or_default())
                .bind(assessment.kind.as_str())
                .fetch_one(&mut *conn)
                .await?;
                if let Some(protection) = first_protection(kept, important, needs_reply, not_spam) {
                    let protected = NewJudgment {
                        protection: Some(protection),
                        outcome: JunkOutcome::Protected,
                        ..*judgment
                    };
                    insert_judgment(conn, &protected, now).await?;
                    return Ok(Filtering::Protected);
                }
                let admitted = state.as_deref() == Some("filtered") && mode.as_deref() == Some("pilot");
                if judgment.mode == JunkMode::Pilot && !admitted {
                    let slot: Option<(i32,)> = sqlx::query_as(
                        "INSERT INTO email_junk_pilot_days AS d (day, used) VALUES ($1, 1)
                         ON CONFLICT (day) DO UPDATE SET used = d.used + 1 WHERE d.used < $2
                         RETURNING used",
                    )
                    .bind(jiff_sqlx::Date::from(day))
                    .bind(PILOT_DAILY_CONVERSATIONS)
                    .fetch_optional(&mut *conn)
                    .await?;
                    if slot.is_none() {
                        let no_slot = NewJudgment {
                            outcome: JunkOutcome::NoSlot,
                            ..*judgment
                        };
                        insert_judgment(conn, &no_slot, now).await?;
                        return Ok(Filtering::NoSlot);
                    }
                }
                sqlx::query(
                    "UPDATE email_threads SET importance = $2, reply_need = NULL, assessed_importance = $2,
                         assessed_reply_need = NULL, gist = $3, classifier = $4, rule = $5, kind = $6, assessed_at = $7,
                         junk_state = 'filtered', junk_category = $8, junk_probability = $9, junk_mode = $10,
                         suspected_spam = ($8 = 'spam')
                     WHERE id = $1",
                )
                .bind(judgment.thread.as_uuid())
                .bind(Importance::Other.as_str())
                .bind(assessment.gist)
                .bind(assessment.classifier)
                .bind(assessment.rule)
                .bind(assessment.kind.as_str())
                .bind(now)
                .bind(category.as_str())
                .bind(probability)
                .bind(judgment.mode.as_str())
                .execute(&mut *conn)
                .await?;
                crate::email::feedback::apply_rules(conn, judgment.thread.as_uuid()).await?;
                let filtered = NewJudgment {
                    outcome: JunkOutcome::Filtered,
                    ..*judgment
                };
                insert_judgment(conn, &filtered, now).await?;
                Ok(Filtering::Filtered)
            },
            |_| true,
        )
        .await
    }

    /// Marks up to `limit` of the account's filtered threads whose filter no longer applies
    /// (every one when `applying` is `None`, else those another mode filtered) for ordinary
    /// assessment, newest first; how many. Their suspected-spam flag goes with the decision.
    pub async fn restore_filtered(self, account_id: &AccountId, applying: Option<JunkMode>, limit: i64) -> Result<u64> {
        Ok(sqlx::query(
            "UPDATE email_threads SET junk_state = 'restoring', suspected_spam = false
             WHERE id IN (SELECT id FROM email_threads WHERE account_id = $1 AND junk_state = 'filtered'
                              AND junk_mode IS DISTINCT FROM $2
                          ORDER BY latest_at DESC, id DESC LIMIT $3)",
        )
        .bind(account_id.as_str())
        .bind(applying.map(JunkMode::as_str))
        .bind(limit)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    /// The pilot's slots used on `day` (UTC).
    pub async fn pilot_slots_used(self, day: jiff::civil::Date) -> Result<i32> {
        let used: Option<i32> = sqlx::query_scalar("SELECT used FROM email_junk_pilot_days WHERE day = $1")
            .bind(jiff_sqlx::Date::from(day))
            .fetch_optional(&self.pool)
            .await?;
        Ok(used.unwrap_or_default())
    }

    /// Journals `email.junk.started`, before the request leaves. Until its completion is
    /// journaled, the allowances count its ceiling.
    pub async fn junk_started(self, request: &JunkRequest<'_>) -> Result<()> {
        sqlx::query(
            "INSERT INTO email_junk_events (request, kind, purpose, account_id, at, ceiling_micros)
             VALUES ($1, 'email.junk.started', $2, $3, $4, $5)",
        )
        .bind(request.request)
        .bind(request.purpose)
        .bind(request.account_id.as_str())
        .bind(self.now_sql())
        .bind(request.ceiling_micros)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Journals `email.junk.completed` with what the request is charged, and charges it to the
    /// email cost allowances, in one transaction.
    pub async fn junk_completed(
        self,
        request: &JunkRequest<'_>,
        charge_micros: i64,
        reported: bool,
        outcome: &str,
    ) -> Result<()> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                sqlx::query(
                    "INSERT INTO email_junk_events (request, kind, purpose, account_id, at, ceiling_micros,
                         charge_micros, reported, outcome)
                     VALUES ($1, 'email.junk.completed', $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(request.request)
                .bind(request.purpose)
                .bind(request.account_id.as_str())
                .bind(now)
                .bind(request.ceiling_micros)
                .bind(charge_micros)
                .bind(reported)
                .bind(outcome)
                .execute(&mut *conn)
                .await?;
                sqlx::query(
                    "INSERT INTO email_charges (account_id, charged_at, micros, reported) VALUES ($1, $2, $3, $4)",
                )
                .bind(request.account_id.as_str())
                .bind(now)
                .bind(charge_micros)
                .bind(reported)
                .execute(&mut *conn)
                .await?;
                Ok(())
            },
            |_| true,
        )
        .await
    }

    /// Records the mode in force on the account and why it is not the configured one.
    pub async fn set_junk_status(self, account_id: &AccountId, status: JunkStatus) -> Result<()> {
        sqlx::query(
            "UPDATE email_accounts SET junk_mode = $2, junk_in_force = $3, junk_reason = $4, junk_checked_at = $5
             WHERE account_id = $1",
        )
        .bind(account_id.as_str())
        .bind(status.configured.as_str())
        .bind(status.in_force.as_str())
        .bind(status.reason.map(JunkReason::as_str))
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The account's judgments, oldest first: (provider message id, outcome, protection).
    pub async fn junk_judgments(
        self,
        account_id: &AccountId,
    ) -> Result<Vec<(String, JunkOutcome, Option<Protection>)>> {
        let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
            "SELECT provider_message_id, outcome, protection FROM email_junk_judgments WHERE account_id = $1
             ORDER BY judged_at, provider_message_id",
        )
        .bind(account_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(message, outcome, protection)| Ok((message, crate::named(outcome)?, named_optional(protection)?)))
            .collect()
    }
}

async fn insert_judgment(
    conn: &mut sqlx::PgConnection,
    judgment: &NewJudgment<'_>,
    now: jiff_sqlx::Timestamp,
) -> sqlx::Result<bool> {
    Ok(sqlx::query(
        "INSERT INTO email_junk_judgments (account_id, provider_message_id, thread, fingerprint, mode, policy, model,
             category, probability, protection, outcome, judged_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (account_id, provider_message_id) DO NOTHING",
    )
    .bind(judgment.account_id.as_str())
    .bind(judgment.provider_message_id)
    .bind(judgment.thread.as_uuid())
    .bind(judgment.fingerprint)
    .bind(judgment.mode.as_str())
    .bind(judgment.policy)
    .bind(judgment.model)
    .bind(judgment.judgment.map(|(category, _)| category.as_str()))
    .bind(judgment.judgment.map(|(_, probability)| probability))
    .bind(judgment.protection.map(Protection::as_str))
    .bind(judgment.outcome.as_str())
    .bind(now)
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// The filter's reason on a thread row, when it is filtered.
pub(crate) fn filtered(
    state: Option<&str>,
    category: Option<String>,
    probability: Option<f64>,
    mode: Option<String>,
) -> Result<Option<JunkFiltered>> {
    if state != Some("filtered") {
        return Ok(None);
    }
    let (Some(category), Some(probability), Some(mode)) = (category, probability, mode) else {
        return Ok(None);
    };
    Ok(Some(JunkFiltered {
        category: crate::named(category)?,
        probability,
        mode: crate::named(mode)?,
    }))
}
