//! Tool invocations: the row the worker records before any side effect, and the result that
//! settles it (with its `tool.result` event).

use domain::approval::{InvocationState, Risk};
use domain::ids::{RunId, SessionId};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;
use wire::event::{Event, ToolResult, Trust};

use crate::events::append;
use crate::{Result, parsed};

#[derive(Clone, Debug, PartialEq)]
pub struct InvocationRow {
    pub id: Uuid,
    pub run_id: RunId,
    pub step: i32,
    pub position: i32,
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub state: InvocationState,
    pub result: Option<Value>,
    pub code: Option<String>,
    /// The tool's risk when the call was recorded (none before migration 0035, or for a tool
    /// outside the roster).
    pub risk: Option<Risk>,
}

/// The [`INVOCATION_COLUMNS`] of a `tool_invocations` row as stored.
#[derive(sqlx::FromRow)]
struct InvocationRecord {
    id: Uuid,
    run_id: Uuid,
    step: i32,
    position: i32,
    call_id: String,
    tool: String,
    arguments: Value,
    state: String,
    result: Option<Value>,
    code: Option<String>,
    risk: Option<String>,
}

impl InvocationRow {
    pub(crate) fn from_row(row: &PgRow) -> Result<InvocationRow> {
        let record = InvocationRecord::from_row(row)?;
        Ok(InvocationRow {
            id: record.id,
            run_id: RunId::from_uuid(record.run_id),
            step: record.step,
            position: record.position,
            call_id: record.call_id,
            tool: record.tool,
            arguments: record.arguments,
            state: parsed("invocation state", &record.state, InvocationState::parse)?,
            result: record.result,
            code: record.code,
            risk: record
                .risk
                .as_deref()
                .map(|risk| parsed("tool risk", risk, Risk::parse))
                .transpose()?,
        })
    }
}

pub(crate) const INVOCATION_COLUMNS: &str =
    "id, run_id, step, position, call_id, tool, arguments, state, result, code, risk";

/// One invocation, read inside the caller's transaction.
pub(crate) async fn invocation(conn: &mut PgConnection, id: Uuid) -> Result<InvocationRow> {
    let sql = format!("SELECT {INVOCATION_COLUMNS} FROM tool_invocations WHERE id = $1");
    let row = sqlx::query(&sql).bind(id).fetch_one(&mut *conn).await?;
    InvocationRow::from_row(&row)
}

pub(crate) async fn write_result(
    conn: &mut PgConnection,
    session: SessionId,
    invocation: &InvocationRow,
    state: InvocationState,
    result: &Value,
    code: Option<&str>,
) -> Result<()> {
    sqlx::query("UPDATE tool_invocations SET state = $2, result = $3, code = $4, updated_at = now() WHERE id = $1")
        .bind(invocation.id)
        .bind(state.as_str())
        .bind(result)
        .bind(code)
        .execute(&mut *conn)
        .await?;
    let event = Event::ToolResult(ToolResult {
        run_id: invocation.run_id.as_uuid(),
        invocation_id: invocation.id,
        call_id: invocation.call_id.clone(),
        tool: invocation.tool.clone(),
        status: state,
        code: code.map(str::to_owned),
        risk: invocation.risk,
        // Tool output is data, never instructions: clients render it as such.
        trust: Trust::ToolOutput,
        result: result.clone(),
    });
    append(conn, session, Some(invocation.run_id), &event).await?;
    Ok(())
}
