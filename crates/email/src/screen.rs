//! The junk first pass as the refresher runs it (see [`crate::junk`] for the rules): the mode
//! in force found and recorded at each update, each waiting thread's newest message protected,
//! judged and (when a mode applies) filtered, and the model's judgments journaled and charged.

use domain::ids::AccountId;
use domain::junk::{JunkCategory, JunkMode, JunkOutcome, Protection, nominates};
use mail_mcp::accounts::ReadAccount;
use store::{Filtering, JunkRequest, JunkStatus, NewAssessment, NewJudgment, WaitingThread};

use crate::assess::{Mailbox, Rule};
use crate::classify::{Classifier, ModelClassifier};
use crate::junk::{
    Judgment, OFFLINE_JUNK_MODEL, Pass, RESTORE_PER_UPDATE, fingerprint, judge_offline, policy_of, protection,
    read_judgment,
};
use crate::project::ProjectedMessage;
use crate::refresh::{RefreshError, Refresher};

/// A model judgment came to: its judgment (`None`: unreadable, so uncertain), no room in an
/// allowance (why), or a failure (charged all the same).
pub enum Judged {
    Answer(Option<Judgment>),
    Spent(domain::email::AllowanceWait),
    Failed,
}

impl Refresher {
    /// The name judgments are made under: the offline rules', or the assessing model's.
    pub fn junk_model(&self) -> &str {
        match self.classifier.as_ref() {
            Classifier::Offline => OFFLINE_JUNK_MODEL,
            Classifier::Model(model) => &model.model,
        }
    }

    /// Finds and records the mode in force on `account`, and returns to ordinary assessment (a
    /// bounded number per update) the conversations a mode no longer in force had filtered.
    pub(crate) async fn junk_standing(&self, account: &ReadAccount) -> Result<JunkStatus, RefreshError> {
        let status = self
            .junk
            .standing(self.junk_model(), &account.account_id, self.store.now());
        let email = self.store.email();
        email.set_junk_status(&account.account_id, status).await?;
        let applying = matches!(status.in_force, JunkMode::Filter | JunkMode::Pilot).then_some(status.in_force);
        let restored = email
            .restore_filtered(&account.account_id, applying, RESTORE_PER_UPDATE)
            .await?;
        if restored > 0 {
            tracing::info!(account = %account.account_id, restored, in_force = %status.in_force,
                "conversations the junk filter kept out return to ordinary assessment");
        }
        Ok(status)
    }

    /// The first pass over `thread`'s newest message (`message`) with `mode` in force.
    pub(crate) async fn first_pass(
        &self,
        account: &ReadAccount,
        thread: &WaitingThread,
        message: &ProjectedMessage,
        mailbox: Mailbox<'_>,
        mode: JunkMode,
    ) -> Result<Pass, RefreshError> {
        let email = self.store.email();
        let provider_message_id = thread.message.provider_message_id.as_str();
        let sender = message.from.as_ref().map(|from| from.address.as_str());
        let kind = crate::assess::kind(message);
        let facts = email
            .junk_facts(thread.thread, provider_message_id, sender, kind)
            .await?;
        if facts.judged {
            // Not newly eligible: judged once, never again.
            return Ok(Pass::Assess);
        }
        let print = fingerprint(&account.account_id, provider_message_id);
        let record = |judgment: Option<Judgment>, protection: Option<Protection>, outcome: JunkOutcome| NewJudgment {
            account_id: &account.account_id,
            thread: thread.thread,
            provider_message_id,
            fingerprint: &print,
            mode,
            policy: policy_of(mode),
            model: self.junk_model(),
            judgment: judgment.map(|judgment| (judgment.category, judgment.probability)),
            protection,
            outcome,
        };
        if let Some(protection) = protection(message, &facts, mailbox) {
            email
                .record_judgment(&record(None, Some(protection), JunkOutcome::Protected))
                .await?;
            return Ok(Pass::Assess);
        }
        let judgment = match self.classifier.as_ref() {
            Classifier::Offline => Some(judge_offline(message)),
            Classifier::Model(model) => match self
                .judge_with_model(model, &account.account_id, message, "judgment")
                .await?
                .0
            {
                Judged::Answer(judgment) => judgment,
                Judged::Spent(wait) => {
                    email.set_waiting(&account.account_id, Some(wait)).await?;
                    return Ok(Pass::Wait);
                }
                // A failed request (charged) is no judgment: uncertain, so the message is
                // protected and assessed the ordinary way, never asked about again.
                Judged::Failed => None,
            },
        };
        let Some(judgment) = judgment.filter(|judgment| {
            judgment.category == JunkCategory::Keep || nominates(judgment.category, judgment.probability)
        }) else {
            // Failed, unreadable, or junk below the threshold: uncertain, so protected.
            email
                .record_judgment(&record(judgment, Some(Protection::Uncertain), JunkOutcome::Protected))
                .await?;
            return Ok(Pass::Assess);
        };
        if judgment.category == JunkCategory::Keep {
            email
                .record_judgment(&record(Some(judgment), None, JunkOutcome::Kept))
                .await?;
            return Ok(Pass::Assess);
        }
        if mode == JunkMode::Shadow {
            email
                .record_judgment(&record(Some(judgment), None, JunkOutcome::Recorded))
                .await?;
            return Ok(Pass::Assess);
        }
        let gist = crate::assess::assess(message, mailbox).gist;
        let assessment = NewAssessment {
            classifier: crate::assess::CLASSIFIER_VERSION,
            importance: domain::email::Importance::Other,
            reply_need: None,
            gist: &gist,
            rule: Rule::JunkFilter.as_str(),
            kind,
        };
        let day = self.store.now().to_zoned(jiff::tz::TimeZone::UTC).date();
        Ok(
            match email
                .record_filtered(
                    &record(Some(judgment), None, JunkOutcome::Filtered),
                    &assessment,
                    sender,
                    day,
                )
                .await?
            {
                Filtering::Filtered => Pass::Filtered,
                // No slot left today, or the owner protected it meanwhile (either recorded), or
                // a newer message arrived: the ordinary way.
                Filtering::NoSlot | Filtering::Protected | Filtering::Moved => Pass::Assess,
            },
        )
    }

    /// One model judgment of `message`, when the allowances have room for its ceiling, and what
    /// it was charged: `email.junk.started` is journaled before the request leaves,
    /// `email.junk.completed` with its charge (the reported usage, else the ceiling) after.
    pub async fn judge_with_model(
        &self,
        model: &ModelClassifier,
        account_id: &AccountId,
        message: &ProjectedMessage,
        purpose: &str,
    ) -> Result<(Judged, domain::run::Cost), RefreshError> {
        let prepared = model.prepare_judgment(message);
        if let Some(wait) = self.room_for(prepared.ceiling).await? {
            return Ok((Judged::Spent(wait), domain::run::Cost::from_micros(0)));
        }
        let email = self.store.email();
        let request = JunkRequest {
            request: uuid::Uuid::now_v7(),
            purpose,
            account_id,
            ceiling_micros: prepared.ceiling.micros(),
        };
        email.junk_started(&request).await?;
        tracing::debug!(event = "email.junk.started", request = %request.request, purpose, ceiling_micros = request.ceiling_micros);
        let (judged, charge, reported, outcome) = match model.send(&prepared).await {
            Ok((text, charge, reported)) => {
                let judgment = read_judgment(&text);
                let outcome = if judgment.is_some() { "answered" } else { "unreadable" };
                (Judged::Answer(judgment), charge, reported, outcome)
            }
            Err(failed) => {
                tracing::warn!(account = %account_id, error = %failed.error.kind(), "a junk judgment request failed");
                (Judged::Failed, failed.charge, false, "failed")
            }
        };
        email
            .junk_completed(&request, charge.micros(), reported, outcome)
            .await?;
        tracing::debug!(event = "email.junk.completed", request = %request.request, purpose,
            charge_micros = charge.micros(), reported, outcome);
        Ok((judged, charge))
    }
}
