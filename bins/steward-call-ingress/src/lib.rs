//! The call-ingress listener's routes: `/webhooks/callprov` (signed deliveries become
//! receipts) and `/health/ready`. The binary (`main.rs`) checks its environment, hardens the
//! process and serves [`app`] on loopback; tests serve it in process.
//!
//! A delivery is accepted only when `X-Webhook-Signature` is the 64-character lowercase hex
//! HMAC-SHA256 of the exact raw body under the signing secret; there is no unsigned fallback
//! and no second convention. The body must be a JSON object whose `call_id` is the provider's
//! call id; only that id is queued, nothing else of the body is kept or logged.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use store::Store;

/// The largest webhook body accepted.
const MAX_BODY_BYTES: usize = 64 * 1024;

struct Ingress {
    store: Store,
    secret: Vec<u8>,
}

/// The listener's routes on `store` (the ingress login), verifying deliveries with `secret`.
pub fn app(store: Store, secret: Vec<u8>) -> Router {
    let state = Arc::new(Ingress { store, secret });
    Router::new()
        .route("/webhooks/callprov", post(webhook))
        .route("/health/ready", get(ready))
        .fallback(|| async { problem(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .method_not_allowed_fallback(|| async {
            problem(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "the route does not allow this method",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// A problem document (RFC 9457) with a stable `code`.
fn problem(status: StatusCode, code: &str, detail: &str) -> Response {
    let body = serde_json::json!({
        "type": format!("urn:steward:problem:{code}"),
        "title": status.canonical_reason().unwrap_or("error"),
        "status": status.as_u16(),
        "code": code,
        "detail": detail,
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/problem+json")],
        body.to_string(),
    )
        .into_response()
}

async fn ready(State(ingress): State<Arc<Ingress>>) -> Response {
    match ingress.store.migrations_current().await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "database migrations are not current",
        ),
        Err(_) => problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the database is unreachable",
        ),
    }
}

/// Decodes exactly 64 lowercase hex characters.
fn signature(text: &[u8]) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

#[derive(serde::Deserialize)]
struct Delivery {
    call_id: String,
}

/// Why a delivery is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `X-Webhook-Signature` is missing or not 64 lowercase hex characters.
    SignatureMalformed,
    /// The signature is not the body's under the signing secret.
    SignatureMismatch,
    /// The signed body is not a JSON object with a well-formed `call_id`.
    Body,
}

/// The call id of a delivery whose `X-Webhook-Signature` value is `claimed` and whose raw body
/// is `body`, verified under `secret`. Both are the sender's bytes, untrusted: the property
/// tests in `tests/fuzz` feed them arbitrary input.
pub fn verify(secret: &[u8], claimed: Option<&[u8]>, body: &[u8]) -> Result<String, Refusal> {
    let claimed = claimed.and_then(signature).ok_or(Refusal::SignatureMalformed)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts a key of any length");
    mac.update(body);
    // Constant-time comparison.
    mac.verify_slice(&claimed).map_err(|_| Refusal::SignatureMismatch)?;
    match serde_json::from_slice::<Delivery>(body) {
        Ok(delivery) if valid_call_id(&delivery.call_id) => Ok(delivery.call_id),
        _ => Err(Refusal::Body),
    }
}

async fn webhook(
    State(ingress): State<Arc<Ingress>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the webhook body is larger than 64 KiB",
            );
        }
        Err(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "webhook_body_invalid",
                "the body could not be read",
            );
        }
    };
    let claimed = headers.get("x-webhook-signature").map(|value| value.as_bytes());
    let call_id = match verify(&ingress.secret, claimed, &body) {
        Ok(call_id) => call_id,
        Err(Refusal::SignatureMalformed) => {
            return problem(
                StatusCode::UNAUTHORIZED,
                "webhook_signature_invalid",
                "X-Webhook-Signature must be the 64-character lowercase hex HMAC-SHA256 of the body",
            );
        }
        Err(Refusal::SignatureMismatch) => {
            tracing::warn!("webhook refused: signature mismatch");
            return problem(
                StatusCode::UNAUTHORIZED,
                "webhook_signature_invalid",
                "the signature does not match the body",
            );
        }
        Err(Refusal::Body) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "webhook_body_invalid",
                "the body must be a JSON object with a `call_id` of 1 to 128 letters, digits or ._:-",
            );
        }
    };
    match ingress.store.record_call_receipt(&call_id).await {
        Ok(receipt) => {
            tracing::info!(receipt = %receipt.id, deliveries = receipt.deliveries, "call receipt queued");
            StatusCode::NO_CONTENT.into_response()
        }
        Err(error) => {
            tracing::error!(%error, "cannot queue the call receipt");
            problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the receipt could not be stored; retry later",
            )
        }
    }
}

fn valid_call_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b':' | b'-'))
}
