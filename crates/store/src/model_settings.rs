//! The owner's model settings.

use domain::ids::PrincipalId;
use domain::models::ModelChoice;

use crate::{Result, Store};

impl Store {
    /// The stored choice, if the owner made one.
    pub async fn model_settings(&self, principal: &PrincipalId) -> Result<Option<ModelChoice>> {
        let row: Option<(String, String, String, String)> = sqlx::query_as(
            "SELECT chat_model, chat_reasoning_effort, memory_model, memory_reasoning_effort
             FROM model_settings WHERE principal_id = $1",
        )
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(
            |(chat_model, chat_reasoning_effort, memory_model, memory_reasoning_effort)| ModelChoice {
                chat_model,
                chat_reasoning_effort,
                memory_model,
                memory_reasoning_effort,
            },
        ))
    }

    /// Saves the owner's choice; runs submitted from now on use it.
    pub async fn save_model_settings(&self, principal: &PrincipalId, choice: &ModelChoice) -> Result<()> {
        sqlx::query(
            "INSERT INTO model_settings (principal_id, chat_model, chat_reasoning_effort, memory_model,
             memory_reasoning_effort)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (principal_id) DO UPDATE SET chat_model = excluded.chat_model,
                 chat_reasoning_effort = excluded.chat_reasoning_effort, memory_model = excluded.memory_model,
                 memory_reasoning_effort = excluded.memory_reasoning_effort, updated_at = now()",
        )
        .bind(principal.as_str())
        .bind(&choice.chat_model)
        .bind(&choice.chat_reasoning_effort)
        .bind(&choice.memory_model)
        .bind(&choice.memory_reasoning_effort)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
