//! Refreshing one account's mailbox projection with its read document only.
//!
//! - **First update, and after an expired history id:** a bounded backfill. The profile's
//!   history id is read first (so nothing that arrives during the backfill is missed by the next
//!   incremental update), then every message since the window's start (`after:`), Spam and
//!   Trash included, is projected; the window's start is recorded as the account's coverage. A
//!   resynchronisation also brings the labels of messages already projected up to date.
//! - **Later updates:** incremental, from the provider's history: new messages are projected
//!   once each (with their labels), and label changes are applied message by message.
//! - **Then assessment:** threads whose newest message is unassessed are assessed oldest first
//!   by the pinned classifier, and the account records why any still wait.
//!
//! A failed update records a stable error code on the account (never message content); the
//! next completed update clears it. Reads are paced by `GmailClient` to the per-user quota.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use domain::email::AllowanceWait;
use domain::ids::AccountId;
use mail_mcp::accounts::ReadAccount;
use mail_mcp::gmail::{Credential, GmailClient, MailError};
use store::{EmailMessageRow, NewAssessment, NewEmailMessage, Store, StoreError, WaitingThread};

use crate::allowance::{self, Charge, Standing};
use crate::assess::{self, Assessment, Mailbox};
use crate::classify::{Answered, Classifier, ModelClassifier, ModelFailed, Prepared};
use crate::evidence::Dkim;
use crate::junk::{JunkSettings, Pass};
use crate::project::{self, ProjectedMessage};
use crate::provider::{self, HistoryError, MessageRef, RawMessage};
use domain::junk::JunkMode;

/// How far back the first update reaches, unless configured otherwise.
pub const DEFAULT_BACKFILL_DAYS: u32 = 30;

/// Threads assessed per batch.
const ASSESS_BATCH: i64 = 100;

fn credential(account: &ReadAccount) -> Credential<'_> {
    Credential {
        account_id: account.account_id.as_str(),
        document: &account.read,
    }
}

/// Which kind of update ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    /// The first: the backfill window.
    Backfill,
    /// From the history.
    Incremental,
    /// The history id had expired: the backfill window again.
    Resync,
}

/// What an update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Updated {
    pub kind: UpdateKind,
    /// Messages projected for the first time.
    pub new_messages: usize,
    /// Messages whose labels were brought up to date.
    pub relabelled: usize,
    /// Threads assessed.
    pub assessed: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error(transparent)]
    Mail(#[from] MailError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the account `{0}` is not recorded")]
    UnknownAccount(AccountId),
}

impl RefreshError {
    /// The stable code recorded on the account.
    pub fn code(&self) -> &'static str {
        match self {
            RefreshError::Mail(error) => error.code(),
            RefreshError::Store(_) => "email.store_unavailable",
            RefreshError::UnknownAccount(_) => "email.account_unknown",
        }
    }
}

/// Refreshes accounts into the store.
#[derive(Clone, Debug)]
pub struct Refresher {
    pub store: Store,
    pub gmail: Arc<GmailClient>,
    /// How far back the first update (and a resynchronisation) reaches.
    pub backfill: jiff::SignedDuration,
    /// What assesses new mail.
    pub classifier: Arc<Classifier>,
    /// The subscription census, taken after each update while unsubscribe assistance is on
    /// (with the DKIM verifier its evidence is checked by); `None` while it is off.
    pub census: Option<Arc<Dkim>>,
    /// The junk first pass before assessment.
    pub junk: JunkSettings,
}

impl Refresher {
    /// Updates `account`'s projection and assesses what waits. A failure is recorded on the
    /// account (its code) and returned; an expired history id is not a failure but a resync.
    pub async fn update(&self, account: &ReadAccount) -> Result<Updated, RefreshError> {
        let outcome: Result<Updated, RefreshError> = async {
            let mut updated = self.update_projection(account).await?;
            let junk = self.junk_standing(account).await?;
            updated.assessed = self.assess_waiting(account, junk.in_force).await?;
            if let Some(dkim) = &self.census {
                let taken = self.take_census(account, dkim).await?;
                tracing::debug!(account = %account.account_id, senders = taken.senders, checked = taken.checked,
                    still_sending = taken.still_sending, "subscription census taken");
            }
            Ok(updated)
        }
        .await;
        if let Err(error) = &outcome
            && let Err(recording) = self
                .store
                .email()
                .update_failed(&account.account_id, error.code())
                .await
        {
            tracing::warn!(account = %account.account_id, error = %recording, "cannot record a failed mail update");
        }
        outcome
    }

    /// The account's row: its refresh state.
    async fn account_state(&self, account: &ReadAccount) -> Result<store::EmailAccountRow, RefreshError> {
        self.store
            .email()
            .account(&account.account_id)
            .await?
            .ok_or_else(|| RefreshError::UnknownAccount(account.account_id.clone()))
    }

    async fn update_projection(&self, account: &ReadAccount) -> Result<Updated, RefreshError> {
        let state = self.account_state(account).await?;
        let Some(start) = state.history_id else {
            return self.backfill(account, UpdateKind::Backfill).await;
        };
        let changes = match provider::changes_since(&self.gmail, credential(account), &start).await {
            Ok(changes) => changes,
            Err(HistoryError::Expired) => {
                tracing::info!(account = %account.account_id, "mail history expired; resynchronising");
                return self.backfill(account, UpdateKind::Resync).await;
            }
            Err(HistoryError::Mail(error)) => return Err(error.into()),
        };
        let mut new_messages = 0;
        for message in &changes.added {
            if self.project_message(account, message).await? {
                new_messages += 1;
            }
        }
        let mut by_thread: BTreeMap<&str, Vec<(String, Vec<String>)>> = BTreeMap::new();
        for (message, (thread, labels)) in &changes.relabelled {
            by_thread
                .entry(thread.as_str())
                .or_default()
                .push((message.clone(), labels.clone()));
        }
        for (thread, labels) in &by_thread {
            self.store
                .email()
                .set_labels(&account.account_id, thread, labels)
                .await?;
        }
        self.store
            .email()
            .update_completed(&account.account_id, None, &changes.history_id, None)
            .await?;
        Ok(Updated {
            kind: UpdateKind::Incremental,
            new_messages,
            relabelled: changes.relabelled.len(),
            assessed: 0,
        })
    }

    /// The backfill window: every message since its start, projected (or, when already
    /// projected during a resync, its labels brought up to date).
    async fn backfill(&self, account: &ReadAccount, kind: UpdateKind) -> Result<Updated, RefreshError> {
        let profile = provider::profile(&self.gmail, credential(account)).await?;
        let from = self.store.now() - self.backfill;
        let found =
            provider::list_messages(&self.gmail, credential(account), &format!("after:{}", from.as_second())).await?;
        let ids: Vec<String> = found.iter().map(|message| message.id.clone()).collect();
        let known: HashSet<String> = self
            .store
            .email()
            .known_messages(&account.account_id, &ids)
            .await?
            .into_iter()
            .collect();
        let (mut new_messages, mut relabelled) = (0, 0);
        // Oldest first, so each thread's subject is its first message's from the start.
        for message in found.iter().rev() {
            if known.contains(&message.id) {
                if kind == UpdateKind::Resync && self.relabel_message(account, message).await? {
                    relabelled += 1;
                }
            } else if self.project_message(account, message).await? {
                new_messages += 1;
            }
        }
        self.store
            .email()
            .update_completed(
                &account.account_id,
                Some(&profile.address),
                &profile.history_id,
                Some(from),
            )
            .await?;
        Ok(Updated {
            kind,
            new_messages,
            relabelled,
            assessed: 0,
        })
    }

    /// `message` as the provider has it now; `None` when it no longer has it.
    pub(crate) async fn read(
        &self,
        account: &ReadAccount,
        message: &MessageRef,
    ) -> Result<Option<RawMessage>, RefreshError> {
        match provider::raw_message(&self.gmail, credential(account), &message.id).await {
            Ok(mut raw) => {
                if raw.thread_id.is_empty() {
                    raw.thread_id.clone_from(&message.thread_id);
                }
                Ok(Some(raw))
            }
            Err(MailError::Rejected { status: 404, .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Brings the labels of a projected `message` up to date; whether it is still there.
    async fn relabel_message(&self, account: &ReadAccount, message: &MessageRef) -> Result<bool, RefreshError> {
        let Some(raw) = self.read(account, message).await? else {
            return Ok(false);
        };
        Ok(self
            .store
            .email()
            .set_labels(&account.account_id, &raw.thread_id, &[(raw.id, raw.label_ids)])
            .await?)
    }

    /// Reads `message` and stores it; whether it was new. A message the provider no longer
    /// has, or one that is not a message at all, is passed over.
    async fn project_message(&self, account: &ReadAccount, message: &MessageRef) -> Result<bool, RefreshError> {
        let Some(raw) = self.read(account, message).await? else {
            return Ok(false);
        };
        let projected = match project::project(&raw.bytes) {
            Ok(projected) => projected,
            Err(error) => {
                // Never the content: which message, and why.
                tracing::warn!(account = %account.account_id, message = %message.id, %error, "mail message not projected");
                return Ok(false);
            }
        };
        let new = NewEmailMessage {
            provider_message_id: &message.id,
            provider_thread_id: &raw.thread_id,
            sender: projected.from.as_ref(),
            recipients: &projected.to,
            copied: &projected.cc,
            sent_at: projected.date.unwrap_or_else(|| self.store.now()),
            subject: projected.subject.as_deref().unwrap_or_default(),
            body: &projected.text,
            text_cut: projected.text_cut,
            attachments: &projected.attachments,
            bulk: json(&projected.bulk),
            labels: &raw.label_ids,
        };
        Ok(self.store.email().record_message(&account.account_id, &new).await?)
    }

    /// Assesses the account's waiting threads, oldest first, each after the junk first pass
    /// when one is in force (`junk`); how many were assessed (or filtered). What the classifier
    /// knows of the mailbox is read only when something waits.
    async fn assess_waiting(&self, account: &ReadAccount, junk: JunkMode) -> Result<usize, RefreshError> {
        let mut waiting = self.waiting(account).await?;
        if waiting.is_empty() {
            if matches!(self.classifier.as_ref(), Classifier::Model(_)) {
                self.store.email().set_waiting(&account.account_id, None).await?;
            }
            return Ok(0);
        }
        let state = self.account_state(account).await?;
        let owner: HashSet<String> = state.address.iter().map(|address| address.to_lowercase()).collect();
        let known: HashSet<String> = self
            .store
            .email()
            .known_correspondents(&account.account_id)
            .await?
            .into_iter()
            .collect();
        let mailbox = assess::Mailbox {
            owner: &owner,
            known: &known,
        };
        let mut assessed = 0;
        while !waiting.is_empty() {
            let mut recorded_any = false;
            for thread in &waiting {
                let message = rebuild(&thread.message);
                if junk != JunkMode::Off {
                    match self.first_pass(account, thread, &message, mailbox, junk).await? {
                        Pass::Filtered => {
                            assessed += 1;
                            recorded_any = true;
                            continue;
                        }
                        Pass::Assess => {}
                        // The allowances are spent, or the model failed: the rest waits too.
                        Pass::Wait => return Ok(assessed),
                    }
                }
                let assessment = match self.classifier.as_ref() {
                    Classifier::Offline => assess::assess(&message, mailbox),
                    Classifier::Model(model) => match self.ask_model(model, account, &message, mailbox).await? {
                        Some(assessment) => assessment,
                        // Waiting for the allowances, or the model failed: the rest waits too,
                        // in date order, for a later update.
                        None => return Ok(assessed),
                    },
                };
                let new = NewAssessment {
                    classifier: &assessment.classifier,
                    importance: assessment.importance,
                    reply_need: assessment.reply_need,
                    gist: &assessment.gist,
                    rule: assessment.rule.as_str(),
                    kind: assess::kind(&message),
                };
                if self
                    .store
                    .email()
                    .record_assessment(thread.thread, &thread.message.provider_message_id, &new)
                    .await?
                {
                    assessed += 1;
                    recorded_any = true;
                }
            }
            // A batch where nothing could be recorded would come back the same.
            if !recorded_any {
                break;
            }
            waiting = self.waiting(account).await?;
        }
        if matches!(self.classifier.as_ref(), Classifier::Model(_)) {
            self.store.email().set_waiting(&account.account_id, None).await?;
        }
        Ok(assessed)
    }

    /// One automatic model assessment, when the allowances have room for its ceiling; the
    /// request is charged (its reported usage, or its ceiling). `None` when it must wait: the
    /// account then says why (an allowance spent), or the model failed (logged).
    async fn ask_model(
        &self,
        model: &ModelClassifier,
        account: &ReadAccount,
        message: &ProjectedMessage,
        mailbox: Mailbox<'_>,
    ) -> Result<Option<Assessment>, RefreshError> {
        let prepared = model.prepare(message);
        match self
            .within_allowances(&account.account_id, &prepared, model.ask(&prepared, message, mailbox))
            .await?
        {
            Metered::Answered(assessment) => Ok(Some(assessment)),
            Metered::Spent(reason) => {
                self.store
                    .email()
                    .set_waiting(&account.account_id, Some(reason))
                    .await?;
                Ok(None)
            }
            Metered::Failed => {
                tracing::warn!(account = %account.account_id, "the assessing model failed; new mail waits for the next update");
                Ok(None)
            }
        }
    }

    /// Sends `ask` (the request `prepared`) only if its ceiling fits both allowances, and
    /// charges what it cost (its ceiling when it failed).
    pub(crate) async fn within_allowances<T>(
        &self,
        account_id: &AccountId,
        prepared: &Prepared,
        ask: impl std::future::Future<Output = Result<Answered<T>, ModelFailed>>,
    ) -> Result<Metered<T>, RefreshError> {
        if !matches!(self.classifier.as_ref(), Classifier::Model(_)) {
            return Ok(Metered::Failed);
        }
        if let Some(wait) = self.room_for(prepared.ceiling).await? {
            return Ok(Metered::Spent(wait));
        }
        match ask.await {
            Ok(answered) => {
                self.store
                    .email()
                    .record_charge(account_id, answered.charge.micros(), answered.reported)
                    .await?;
                Ok(Metered::Answered(answered.value))
            }
            Err(failed) => {
                self.store
                    .email()
                    .record_charge(account_id, failed.charge.micros(), false)
                    .await?;
                tracing::warn!(account = %account_id, error = %failed.error.kind(), "a model request failed");
                Ok(Metered::Failed)
            }
        }
    }

    /// Whether both allowances have room for a request costing at most `ceiling`; why not
    /// when they have none.
    pub(crate) async fn room_for(&self, ceiling: domain::run::Cost) -> Result<Option<AllowanceWait>, RefreshError> {
        let Classifier::Model(model) = self.classifier.as_ref() else {
            return Ok(None);
        };
        let now = self.store.now();
        let since = now.checked_sub(allowance::MONTH).unwrap_or(now);
        let charges: Vec<Charge> = self
            .store
            .email()
            .charges_since(since)
            .await?
            .into_iter()
            .map(|(at, micros)| Charge {
                at,
                cost: domain::run::Cost::from_micros(micros),
            })
            .collect();
        Ok(match allowance::standing(model.allowances, &charges, now, ceiling) {
            Standing::Open => None,
            Standing::DailySpent => Some(AllowanceWait::DailyAllowanceSpent),
            Standing::MonthlySpent => Some(AllowanceWait::MonthlyAllowanceSpent),
        })
    }

    async fn waiting(&self, account: &ReadAccount) -> Result<Vec<WaitingThread>, RefreshError> {
        Ok(self
            .store
            .email()
            .waiting_threads(&account.account_id, ASSESS_BATCH)
            .await?)
    }
}

/// A model request within the allowances came to: its answer, no room in an allowance (why),
/// or a failure (charged all the same).
pub(crate) enum Metered<T> {
    Answered(T),
    Spent(AllowanceWait),
    Failed,
}

/// A stored message as the classifier reads it.
pub fn rebuild(message: &EmailMessageRow) -> ProjectedMessage {
    ProjectedMessage {
        from: message.sender.clone(),
        to: message.recipients.clone(),
        cc: message.copied.clone(),
        subject: Some(message.subject.clone()).filter(|subject| !subject.is_empty()),
        date: Some(message.sent_at),
        text: message.body.clone(),
        text_cut: message.text_cut,
        attachments: message.attachments.clone(),
        bulk: serde_json::from_value(message.bulk.clone()).unwrap_or_default(),
    }
}

/// A part of the projection as stored JSON (plain data: encoding cannot fail).
fn json(value: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
