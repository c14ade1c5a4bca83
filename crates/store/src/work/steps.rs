//! Recorded model steps and tool calls settled without a dispatch.

use super::*;

impl Work<'_> {
    /// Records one model call: usage counters, the `assistant.message` event and the queued
    /// invocations of its tool calls, together.
    pub async fn record_model_step(self, lease: &Lease, step: ModelStep<'_>) -> Result<Option<Vec<InvocationRow>>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let number: i32 = sqlx::query_scalar(
                    "UPDATE runs SET steps = steps + 1, model_calls = model_calls + 1,
                         tool_calls = tool_calls + $2, cost_micros = cost_micros + $3,
                         input_tokens = input_tokens + $4, output_tokens = output_tokens + $5, updated_at = now()
                     WHERE id = $1 RETURNING steps",
                )
                .bind(lease.run.as_uuid())
                .bind(i32::try_from(step.calls.len()).unwrap_or(i32::MAX))
                .bind(step.cost.micros())
                .bind(step.input_tokens)
                .bind(step.output_tokens)
                .fetch_one(&mut *tx)
                .await?;
                let event = Event::AssistantMessage(AssistantMessage {
                    run_id: lease.run.as_uuid(),
                    step: number,
                    text: step.text.to_owned(),
                    tool_calls: step
                        .calls
                        .iter()
                        .map(|call| ToolCall {
                            call_id: call.call_id.to_owned(),
                            tool: call.tool.to_owned(),
                            arguments: call.arguments.clone(),
                        })
                        .collect(),
                    usage: StepUsage {
                        input_tokens: step.input_tokens,
                        output_tokens: step.output_tokens,
                        cost: step.cost.to_string(),
                    },
                });
                append(tx, lease.session, Some(lease.run), &event).await?;
                let mut invocations = Vec::with_capacity(step.calls.len());
                for (position, call) in step.calls.iter().enumerate() {
                    let sql = format!(
                        "INSERT INTO tool_invocations (id, run_id, session_id, step, position, call_id, tool,
                         arguments, state, risk)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9) RETURNING {INVOCATION_COLUMNS}"
                    );
                    let row = sqlx::query(&sql)
                        .bind(Uuid::now_v7())
                        .bind(lease.run.as_uuid())
                        .bind(lease.session.as_uuid())
                        .bind(number)
                        .bind(i32::try_from(position).unwrap_or(i32::MAX))
                        .bind(call.call_id)
                        .bind(call.tool)
                        .bind(call.arguments)
                        .bind(call.risk.map(|risk| risk.as_str()))
                        .fetch_one(&mut *tx)
                        .await?;
                    invocations.push(InvocationRow::from_row(&row)?);
                }
                Ok(Some(invocations))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// What the ended run `run` may still spend on forming beliefs: its cost limit less what it
    /// used (zero when nothing is left).
    pub async fn forming_room(self, run: RunId) -> Result<Cost> {
        let room: i64 = sqlx::query_scalar("SELECT greatest(max_cost_micros - cost_micros, 0) FROM runs WHERE id = $1")
            .bind(run.as_uuid())
            .fetch_one(&self.pool)
            .await?;
        Ok(Cost::from_micros(room))
    }

    /// Charges the memory model's call that formed beliefs after `run` ended: its tokens and cost
    /// are added to the run's usage (it is not a step of the run).
    pub async fn charge_forming(self, run: RunId, input_tokens: i64, output_tokens: i64, cost: Cost) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET cost_micros = cost_micros + $2, input_tokens = input_tokens + $3,
                 output_tokens = output_tokens + $4, updated_at = now()
             WHERE id = $1",
        )
        .bind(run.as_uuid())
        .bind(cost.micros())
        .bind(input_tokens)
        .bind(output_tokens)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Settles an invocation without dispatching it (read-only results, denials, unknown tools,
    /// outcomes found unknown on resume) and records `tool.result`.
    /// A `reconciliation` is recorded with the result (a mail write or send found with no
    /// recorded outcome).
    pub async fn settle_invocation(
        self,
        lease: &Lease,
        invocation: &InvocationRow,
        state: InvocationState,
        result: &Value,
        code: Option<&str>,
        reconciliation: Option<&NewReconciliation<'_>>,
    ) -> Result<Option<()>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let code = mail_code(tx, invocation, state, code, reconciliation).await?;
                write_result(tx, lease.session, invocation, state, result, code).await?;
                // Only a dispatched invocation can have armed a reconciliation; one found
                // dispatching on resume settles here, unknown.
                if state == InvocationState::OutcomeUnknown {
                    crate::mail::open(tx, lease.session, invocation, reconciliation).await?;
                }
                Ok(Some(()))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }
}
