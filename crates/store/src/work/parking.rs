//! Parking a run on an approval or a question to the owner.

use super::*;

impl Work<'_> {
    /// Parks the run on an approval: the approval (PENDING), the parked state and the
    /// notification commit together. The run stops counting working time and waits for the
    /// owner at most `wait_seconds`.
    pub async fn park_for_approval(
        self,
        lease: &Lease,
        invocation: &InvocationRow,
        risk: Risk,
        shown: &DisplayedArguments,
        task_offer: Option<&domain::browser::TaskOffer>,
        wait_seconds: u32,
    ) -> Result<Option<Uuid>> {
        let record = async |tx: &mut PgConnection, approval: Uuid| {
            record_approval(tx, lease, invocation, risk, shown, approval, Start::Pending(task_offer)).await
        };
        self.park_on(lease, invocation, Waiting::Approval, wait_seconds, record)
            .await
    }

    /// Parks the run on a question to the owner, waiting at most `wait_seconds` for the answer.
    pub async fn park_for_question(
        self,
        lease: &Lease,
        invocation: &InvocationRow,
        text: &str,
        wait_seconds: u32,
    ) -> Result<Option<Uuid>> {
        let record = async |tx: &mut PgConnection, question: Uuid| {
            sqlx::query(
                "INSERT INTO questions (id, run_id, session_id, invocation_id, text, status)
                 VALUES ($1, $2, $3, $4, $5, 'PENDING')",
            )
            .bind(question)
            .bind(lease.run.as_uuid())
            .bind(lease.session.as_uuid())
            .bind(invocation.id)
            .bind(text)
            .execute(&mut *tx)
            .await?;
            Ok(Event::QuestionAsked(QuestionAsked {
                run_id: lease.run.as_uuid(),
                question_id: question,
                text: text.to_owned(),
            }))
        };
        self.park_on(lease, invocation, Waiting::Question, wait_seconds, record)
            .await
    }

    /// Parks the run, if its lease still holds, on what it now waits for: `record` stores that
    /// (under the id it is given) and returns the event announcing it. The invocation's state,
    /// the parked run, the owner's notification and the event commit with it. The id, or `None`
    /// when the lease was lost.
    async fn park_on(
        self,
        lease: &Lease,
        invocation: &InvocationRow,
        waiting: Waiting,
        wait_seconds: u32,
        record: impl AsyncFnOnce(&mut PgConnection, Uuid) -> Result<Event>,
    ) -> Result<Option<Uuid>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let id = Uuid::now_v7();
                let event = record(tx, id).await?;
                let (invocation_state, run_state) = match waiting {
                    Waiting::Approval => (InvocationState::AwaitingApproval, RunState::WaitingApproval),
                    Waiting::Question => (InvocationState::AwaitingAnswer, RunState::WaitingInput),
                };
                set_invocation_state(tx, invocation.id, invocation_state).await?;
                park(tx, lease, run_state, now, wait_seconds).await?;
                notify_owner(tx, lease, waiting, id, now).await?;
                append(tx, lease.session, Some(lease.run), &event).await?;
                Ok(Some(id))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }
}

/// What a parked run waits on.
#[derive(Clone, Copy)]
enum Waiting {
    Approval,
    Question,
}

/// Enqueues the owner's push notification of what the run waits on, delivered after
/// [`PUSH_DELAY_SECONDS`] unless it is resolved first.
async fn notify_owner(
    tx: &mut PgConnection,
    lease: &Lease,
    waiting: Waiting,
    id: Uuid,
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    let (kind, column) = match waiting {
        Waiting::Approval => ("approval", "approval_id"),
        Waiting::Question => ("question", "question_id"),
    };
    sqlx::query(&format!(
        "INSERT INTO notification_outbox (id, kind, session_id, run_id, {column}, deliver_after)
         VALUES ($1, $2, $3, $4, $5, $6 + make_interval(secs => $7))"
    ))
    .bind(Uuid::now_v7())
    .bind(kind)
    .bind(lease.session.as_uuid())
    .bind(lease.run.as_uuid())
    .bind(id)
    .bind(now)
    .bind(PUSH_DELAY_SECONDS)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// How a recorded approval starts.
pub(super) enum Start<'a> {
    /// Waiting for the owner, offering a task permission or not.
    Pending(Option<&'a domain::browser::TaskOffer>),
    /// Approved as it is recorded, by the task permission in force, at that time.
    Covered(Uuid, jiff_sqlx::Timestamp),
}

/// Records the approval `id` of `invocation` as it shows its arguments (`shown`), and returns
/// the event announcing it.
pub(super) async fn record_approval(
    tx: &mut PgConnection,
    lease: &Lease,
    invocation: &InvocationRow,
    risk: Risk,
    shown: &DisplayedArguments,
    id: Uuid,
    start: Start<'_>,
) -> Result<Event> {
    let (status, offer, decided_at, approved_for, permission) = match start {
        Start::Pending(offer) => (ApprovalStatus::Pending, offer, None, None, None),
        Start::Covered(permission, at) => (
            ApprovalStatus::Approved,
            None,
            Some(at),
            Some(wire::browser::ApprovedFor::Task),
            Some(permission),
        ),
    };
    let stored_offer = offer
        .map(serde_json::to_value)
        .transpose()
        .map_err(|error| StoreError::Corrupt(format!("a task offer: {error}")))?;
    sqlx::query(
        "INSERT INTO approvals (id, run_id, session_id, invocation_id, tool, risk, arguments,
         argument_digests, status, task_offer, decided_at, approved_for, task_permission_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(id)
    .bind(lease.run.as_uuid())
    .bind(lease.session.as_uuid())
    .bind(invocation.id)
    .bind(&invocation.tool)
    .bind(risk.as_str())
    .bind(&shown.arguments)
    .bind(Value::Object(shown.argument_digests.clone()))
    .bind(status.as_str())
    .bind(&stored_offer)
    .bind(decided_at)
    .bind(approved_for.map(wire::browser::ApprovedFor::as_str))
    .bind(permission)
    .execute(&mut *tx)
    .await?;
    Ok(Event::ApprovalRequested(ApprovalRequested {
        run_id: lease.run.as_uuid(),
        approval_id: id,
        invocation_id: invocation.id,
        tool: invocation.tool.clone(),
        risk,
        arguments: shown.arguments.clone(),
        argument_digests: shown
            .argument_digests
            .iter()
            .filter_map(|(pointer, digest)| Some((pointer.clone(), digest.as_str()?.to_owned())))
            .collect(),
        status,
        task_offer: offer.cloned().map(Box::new),
        approved_for,
        task_permission_id: permission,
    }))
}
