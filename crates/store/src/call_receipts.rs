//! Call-provider webhook receipts, written by the call-ingress listener. Its login sees and
//! writes `kind = 'receipt'` rows only (row security), so this is all it can do with the table.

use uuid::Uuid;

use crate::{Result, Store};

/// The channel a receipt is announced on (the payload is the receipt's id), a wake-up hint for
/// the call worker; the row is the truth.
pub const CALL_RECEIPTS_CHANNEL: &str = "steward_call_receipts";

/// What recording a webhook delivery did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub id: Uuid,
    /// How many deliveries of this call's webhook have arrived, this one included.
    pub deliveries: i32,
}

impl Store {
    /// Queues the provider's call id. A repeated delivery for the same call counts up on the
    /// existing receipt instead of queueing it twice.
    pub async fn record_call_receipt(&self, provider_call_id: &str) -> Result<Receipt> {
        let (id, deliveries): (Uuid, i32) = sqlx::query_as(
            "WITH receipt AS (
                 INSERT INTO call_records (kind, provider_call_id) VALUES ('receipt', $1)
                 ON CONFLICT (provider_call_id) WHERE kind = 'receipt'
                 DO UPDATE SET deliveries = call_records.deliveries + 1, last_received_at = now()
                 RETURNING id, deliveries
             )
             SELECT receipt.id, receipt.deliveries FROM receipt,
                    LATERAL (SELECT pg_notify($2, receipt.id::text)) AS hint",
        )
        .bind(provider_call_id)
        .bind(CALL_RECEIPTS_CHANNEL)
        .fetch_one(&self.pool)
        .await?;
        Ok(Receipt { id, deliveries })
    }
}

impl Store {
    /// A listener on `channel` (the call worker's wake-ups on [`CALL_RECEIPTS_CHANNEL`]).
    pub async fn listener(&self, channel: &str) -> Result<sqlx::postgres::PgListener> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool).await?;
        listener.listen(channel).await?;
        Ok(listener)
    }
}
