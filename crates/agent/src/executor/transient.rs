//! Transient output (the model's text and reasoning deltas), relayed to the API's streams through
//! `NOTIFY` by a task of its own, in order with the step's persisted events.

use domain::ids::{RunId, SessionId};
use store::Store;
use tokio::sync::mpsc;
use wire::event::{Delta, Transient, TransientNotice};

use super::TRANSIENT_MAX_BYTES;
use crate::model::Deltas;

pub(super) enum Relay {
    /// The model's reply text, or its reasoning summary.
    Delta(fn(Delta) -> Transient, String),
    /// Answered once every earlier delta was sent.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Transient output, relayed to the API's streams through `NOTIFY`.
pub(super) struct TransientSink {
    pub(super) sender: mpsc::UnboundedSender<Relay>,
}

impl TransientSink {
    /// Waits until every delta so far was published, so none trails the persisted step.
    pub(super) async fn flush(&self) {
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self.sender.send(Relay::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }
}

impl Deltas for TransientSink {
    fn text(&self, delta: &str) {
        let _ = self
            .sender
            .send(Relay::Delta(Transient::AssistantDelta, delta.to_owned()));
    }

    fn reasoning(&self, delta: &str) {
        let _ = self
            .sender
            .send(Relay::Delta(Transient::ReasoningDelta, delta.to_owned()));
    }
}

pub(super) async fn relay_transient(
    store: Store,
    session: SessionId,
    run: RunId,
    mut receiver: mpsc::UnboundedReceiver<Relay>,
) {
    while let Some(message) = receiver.recv().await {
        let (kind, mut text) = match message {
            Relay::Delta(kind, text) => (kind, text),
            Relay::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        };
        // The limit applies to the serialised payload: escaping can make text much longer.
        let payload = loop {
            let notice = TransientNotice {
                session_id: session.as_uuid(),
                output: kind(Delta {
                    run_id: run.as_uuid(),
                    text: text.clone(),
                }),
            };
            let payload = serde_json::to_string(&notice).unwrap_or_default();
            if payload.len() <= TRANSIENT_MAX_BYTES || text.is_empty() {
                break payload;
            }
            let mut cut = text.len() / 2;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        };
        // Best effort, and in order with the step's own wake-up that follows it.
        store.publish_transient(payload);
    }
}
