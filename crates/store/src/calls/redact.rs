//! Erasing what a deleted call left in conversations (the call worker's, with the `call`
//! login's UPDATE on `tool_invocations` and `events`).
//!
//! Derived from a call are: the results of the call tools that carried it (`calls.list` rows
//! name it: that row is removed from the list; `calls.place` named it: the result is replaced),
//! in the invocation and in its `tool.result` event alike; and everything the model generated
//! later in that conversation, once the call had entered its context: its replies' text, the
//! arguments of the tool calls it proposed, and the questions it asked (in the events, which
//! are the conversation and the model's context). The owner's own messages stay, and so do the
//! records of actions already taken (a tool invocation's arguments, an approval's, a note that
//! was written: the audit of what was done).

use serde_json::{Value, json};
use uuid::Uuid;

use crate::{Result, Store};

/// The text a redacted reply (or question) reads.
pub const REDACTED_REPLY: &str = "[Redacted: this reply came after a call that was deleted.]";

/// The arguments a redacted proposed tool call shows.
fn redacted_arguments() -> Value {
    json!({ "redacted": "proposed after a call that was deleted" })
}

/// What erasing one call redacted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redaction {
    pub tool_results: u64,
    pub replies: u64,
}

/// `result` without the deleted call.
fn without(tool: &str, result: &Value, call: &str) -> Value {
    match tool {
        "calls.list" => {
            let mut result = result.clone();
            if let Some(calls) = result.get_mut("calls").and_then(Value::as_array_mut) {
                calls.retain(|entry| entry.get("call_id").and_then(Value::as_str) != Some(call));
            }
            result
        }
        _ => json!({ "redacted": "the call was deleted" }),
    }
}

impl Store {
    /// Deleted calls whose derived content is not yet redacted.
    pub async fn calls_to_redact(&self, limit: i64) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM call_records
             WHERE kind = 'call' AND deleted_at IS NOT NULL AND redacted_at IS NULL
             ORDER BY deleted_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Redacts what `call` left in conversations, in one transaction, once.
    pub async fn redact_call(&self, call: Uuid) -> Result<Redaction> {
        self.transaction(
            async |conn| {
                let pending: Option<bool> = sqlx::query_scalar(
                    "SELECT redacted_at IS NULL FROM call_records
                     WHERE id = $1 AND kind = 'call' AND deleted_at IS NOT NULL FOR UPDATE",
                )
                .bind(call)
                .fetch_optional(&mut *conn)
                .await?;
                if pending != Some(true) {
                    return Ok(Redaction::default());
                }
                let text = call.to_string();
                let invocations: Vec<(Uuid, Uuid, String, Value)> = sqlx::query_as(
                    "SELECT id, session_id, tool, result FROM tool_invocations
                     WHERE tool IN ('calls.list', 'calls.place') AND result IS NOT NULL
                       AND strpos(result::text, $1) > 0",
                )
                .bind(&text)
                .fetch_all(&mut *conn)
                .await?;
                let mut redaction = Redaction::default();
                for (invocation, session, tool, result) in invocations {
                    let redacted = without(&tool, &result, &text);
                    sqlx::query("UPDATE tool_invocations SET result = $2 WHERE id = $1")
                        .bind(invocation)
                        .bind(&redacted)
                        .execute(&mut *conn)
                        .await?;
                    let first: Option<i64> = sqlx::query_scalar(
                        "UPDATE events SET payload = jsonb_set(payload, '{result}', $3)
                         WHERE session_id = $1 AND kind = 'tool.result' AND payload->>'invocation_id' = $2::text
                         RETURNING seq",
                    )
                    .bind(session)
                    .bind(invocation)
                    .bind(&redacted)
                    .fetch_optional(&mut *conn)
                    .await?;
                    redaction.tool_results += 1;
                    if let Some(seq) = first {
                        redaction.replies += sqlx::query(
                            "UPDATE events SET payload = jsonb_set(
                                 CASE WHEN COALESCE(payload->>'text', '') = '' THEN payload
                                      ELSE jsonb_set(payload, '{text}', to_jsonb($3::text)) END,
                                 '{tool_calls}',
                                 COALESCE((SELECT jsonb_agg(jsonb_set(c, '{arguments}', $4) ORDER BY n)
                                           FROM jsonb_array_elements(payload->'tool_calls') WITH ORDINALITY AS e(c, n)),
                                          '[]'::jsonb))
                             WHERE session_id = $1 AND kind = 'assistant.message' AND seq > $2
                               AND (COALESCE(payload->>'text', '') NOT IN ('', $3)
                                    OR EXISTS (SELECT 1 FROM jsonb_array_elements(payload->'tool_calls') AS c
                                               WHERE c->'arguments' IS DISTINCT FROM $4))",
                        )
                        .bind(session)
                        .bind(seq)
                        .bind(REDACTED_REPLY)
                        .bind(redacted_arguments())
                        .execute(&mut *conn)
                        .await?
                        .rows_affected();
                        redaction.replies += sqlx::query(
                            "UPDATE events SET payload = jsonb_set(payload, '{text}', to_jsonb($3::text))
                             WHERE session_id = $1 AND kind = 'question.asked' AND seq > $2
                               AND payload->>'text' IS DISTINCT FROM $3",
                        )
                        .bind(session)
                        .bind(seq)
                        .bind(REDACTED_REPLY)
                        .execute(&mut *conn)
                        .await?
                        .rows_affected();
                    }
                }
                sqlx::query("UPDATE call_records SET redacted_at = now(), updated_at = now() WHERE id = $1")
                    .bind(call)
                    .execute(&mut *conn)
                    .await?;
                Ok(redaction)
            },
            |_| true,
        )
        .await
    }
}
