//! Wake-ups: the ingress listener announces each receipt on `store::CALL_RECEIPTS_CHANNEL`.
//! The rows are the truth; a lost wake-up costs a poll interval, never a receipt.

use std::sync::Arc;
use std::time::Duration;

use store::Store;
use tokio::sync::Notify;

pub async fn listen(store: Store, wake: Arc<Notify>) {
    loop {
        let mut listener = match store.listener(store::CALL_RECEIPTS_CHANNEL).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for receipts; polling meanwhile");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        loop {
            match listener.try_recv().await {
                Ok(_) => wake.notify_one(),
                Err(error) => {
                    tracing::warn!(%error, "lost the receipt listener; reconnecting");
                    break;
                }
            }
        }
    }
}
