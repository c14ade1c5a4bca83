//! The agent's proposed replies (migration 0020): the owner asks for one on a conversation (the
//! api queues a `propose_reply` operation on the conversation's draft, or on a new reply to its
//! senders), the async worker claims it, writes the text and lands it as an `agent` revision the
//! owner then edits — only while the revision it was asked at is still the newest and not
//! frozen, so it never overwrites the owner's later words nor changes what an approval sends.

use std::time::Duration;

use domain::email::{DraftAuthor, EmailOperationKind};
use domain::ids::{DraftId, ThreadId};
use uuid::Uuid;
use wire::email::SendState;

use crate::Result;
use crate::email::Email;
use crate::email::drafts::{DraftContent, DraftPlace, DraftRow, append, create_draft, read_draft};
use crate::email::operations::{
    EmailOperationRow, OPERATION_COLUMNS, OperationRecord, claim_statement, settle_claimed,
};
use crate::email::sends::{DraftSend, draft_send, void};

/// The operation kind of a proposal.
const PROPOSE: &str = EmailOperationKind::ProposeReply.as_str();

/// A proposal's request answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestProposal {
    /// Queued now, or already queued for this draft (answered with that one).
    Queued(Box<(EmailOperationRow, DraftRow)>),
    UnknownThread,
    /// The conversation's draft is being sent or checked: nothing would land.
    Frozen(DraftSend),
}

/// A claimed proposal: the operation, its draft and the revision it was asked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedProposal {
    pub operation: EmailOperationRow,
    pub draft: DraftId,
    pub revision: i32,
}

#[derive(sqlx::FromRow)]
struct ClaimRecord {
    #[sqlx(flatten)]
    operation: OperationRecord,
    draft_revision: i32,
}

/// A proposal's landing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Landing {
    /// The draft's new newest revision.
    Landed(i32),
    /// The owner saved (or froze) the draft since it was asked: nothing landed.
    DraftChanged,
}

/// A reply's opening: to the newest sender who is not the owner, with the subject `Re:`.
fn reply_start(subject: &str, senders: &[String], owner: Option<&str>) -> DraftContent {
    let to = senders
        .iter()
        .rev()
        .find(|sender| Some(sender.as_str()) != owner)
        .cloned()
        .into_iter()
        .collect();
    let subject = if subject.to_lowercase().starts_with("re:") {
        subject.to_owned()
    } else {
        format!("Re: {subject}")
    };
    DraftContent {
        to,
        cc: Vec::new(),
        subject,
        body: String::new(),
    }
}

impl Email<'_> {
    /// Asks the agent to propose a reply in `thread`: on its newest draft that is not sent, else
    /// on a new reply to its newest sender.
    pub async fn request_proposal(self, thread: ThreadId) -> Result<RequestProposal> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let subject: Option<(String, String, Vec<String>, Option<String>)> = sqlx::query_as(
                    "SELECT t.account_id, t.subject,
                            ARRAY(SELECT lower(c->>'address') FROM jsonb_array_elements(t.correspondents) c),
                            lower(a.address)
                     FROM email_threads t JOIN email_accounts a ON a.account_id = t.account_id
                     WHERE t.id = $1 FOR UPDATE OF t",
                )
                .bind(thread.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                let Some((account_id, subject, senders, owner)) = subject else {
                    return Ok(RequestProposal::UnknownThread);
                };
                let newest: Option<Uuid> = sqlx::query_scalar(
                    "SELECT id FROM email_drafts WHERE thread = $1 ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE",
                )
                .bind(thread.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                let newest = newest.map(DraftId::from);
                let send = match newest {
                    Some(draft) => draft_send(conn, draft).await?,
                    None => None,
                };
                let draft = match (newest, send) {
                    (Some(_), Some(send)) if send.state == SendState::Sent => None,
                    (Some(draft), Some(send)) => {
                        // Asking for a proposal changes the draft: a freeze still waiting for the
                        // owner is withdrawn, as a save would; one on its way or being checked
                        // keeps the draft as it is.
                        if matches!(send.state, SendState::Preparing | SendState::AwaitingApproval) {
                            void(conn, &send, now).await?;
                        } else if !send.settled_unsent() {
                            return Ok(RequestProposal::Frozen(send));
                        }
                        read_draft(conn, draft).await?
                    }
                    (Some(draft), None) => read_draft(conn, draft).await?,
                    (None, _) => None,
                };
                let draft = match draft {
                    Some(draft) => draft,
                    None => {
                        let start = reply_start(&subject, &senders, owner.as_deref());
                        let created =
                            create_draft(conn, DraftPlace::Thread(thread), &start, DraftAuthor::Owner, now).await?;
                        let Some(created) = created else {
                            return Ok(RequestProposal::UnknownThread);
                        };
                        created
                    }
                };
                let pending: Option<OperationRecord> = sqlx::query_as(&format!(
                    "SELECT {OPERATION_COLUMNS} FROM email_operations
                     WHERE draft = $1 AND kind = 'propose_reply' AND state IN ('queued', 'dispatching')
                     ORDER BY created_at LIMIT 1"
                ))
                .bind(draft.id.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                if let Some(pending) = pending {
                    return Ok(RequestProposal::Queued(Box::new((pending.try_into()?, draft))));
                }
                let record: OperationRecord = sqlx::query_as(&format!(
                    "INSERT INTO email_operations (id, account_id, thread, kind, draft, draft_revision, draft_send_run,
                                                   created_at, updated_at)
                     SELECT $1, $2, $3, 'propose_reply', $4, $5, d.send_run, $6, $6 FROM email_drafts d WHERE d.id = $4
                     RETURNING {OPERATION_COLUMNS}"
                ))
                .bind(Uuid::now_v7())
                .bind(&account_id)
                .bind(thread.as_uuid())
                .bind(draft.id.as_uuid())
                .bind(draft.newest.revision)
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                Ok(RequestProposal::Queued(Box::new((record.try_into()?, draft))))
            },
            |outcome| matches!(outcome, RequestProposal::Queued(..)),
        )
        .await
    }

    /// Claims the oldest queued proposal (or one whose claim expired: writing one has no effect
    /// outside the draft, so it is simply written again) for `lease`.
    pub async fn claim_proposal(self, worker: &str, lease: Duration) -> Result<Option<ClaimedProposal>> {
        let record: Option<ClaimRecord> = sqlx::query_as(&claim_statement("propose_reply", ", draft_revision"))
            .bind(worker)
            .bind(self.after(lease))
            .bind(self.now_sql())
            .fetch_optional(&self.pool)
            .await?;
        let Some(record) = record else { return Ok(None) };
        let operation = EmailOperationRow::try_from(record.operation)?;
        Ok(operation.draft.map(|draft| ClaimedProposal {
            draft,
            revision: record.draft_revision,
            operation,
        }))
    }

    /// Lands `body` as the draft's next revision, written by the agent (recipients and subject
    /// as they are), if the revision it was asked at is still the newest and not frozen; settles
    /// the operation either way.
    pub async fn land_proposal(self, claimed: &ClaimedProposal, body: &str) -> Result<Landing> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                // Frozen again since it was asked (its newest freeze changed): it must not land.
                let locked: Option<(i32, bool)> = sqlx::query_as(
                    "SELECT d.revision, d.send_run IS DISTINCT FROM o.draft_send_run
                     FROM email_drafts d JOIN email_operations o ON o.draft = d.id
                     WHERE d.id = $1 AND o.id = $2 FOR UPDATE OF d",
                )
                .bind(claimed.draft.as_uuid())
                .bind(claimed.operation.id.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                let landing = match (locked, read_draft(conn, claimed.draft).await?) {
                    (Some((newest, false)), Some(draft)) if newest == claimed.revision => {
                        // PostgreSQL text holds no NUL; nothing else of the text is changed.
                        let content = DraftContent {
                            body: body.replace('\0', ""),
                            ..draft.newest.content
                        };
                        append(conn, claimed.draft, newest + 1, &content, DraftAuthor::Agent, None, now).await?;
                        Landing::Landed(newest + 1)
                    }
                    _ => Landing::DraftChanged,
                };
                let error = match landing {
                    Landing::Landed(_) => None,
                    Landing::DraftChanged => Some("email.draft_changed"),
                };
                settle_claimed(conn, claimed.operation.id, PROPOSE, error, now).await?;
                Ok(landing)
            },
            |_| true,
        )
        .await
    }

    /// Settles a claimed proposal that could not be written (`error`, a stable code).
    pub async fn fail_proposal(self, claimed: &ClaimedProposal, error: &str) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        settle_claimed(&mut conn, claimed.operation.id, PROPOSE, Some(error), self.now_sql()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_goes_to_the_newest_sender_who_is_not_the_owner() {
        let senders = vec!["ada@example.org".to_owned(), "owner@example.org".to_owned()];
        let start = reply_start("Lunch", &senders, Some("owner@example.org"));
        assert_eq!(start.to, ["ada@example.org"]);
        assert_eq!(start.subject, "Re: Lunch");
        assert_eq!(reply_start("RE: Lunch", &senders, None).subject, "RE: Lunch");
        assert_eq!(reply_start("x", &senders, None).to, ["owner@example.org"]);
    }
}
