//! The call-ingress listener: the one public route `/webhooks/callprov` (reached through the
//! reverse proxy), served on loopback. It holds only the webhook signing secret and a database
//! login that can write receipts and nothing else.
//!
//! A delivery is accepted only when `X-Webhook-Signature` is the 64-character lowercase hex
//! HMAC-SHA256 of the exact raw body under the signing secret; there is no unsigned fallback
//! and no second convention. The body must be a JSON object whose `call_id` is the provider's
//! call id; only that id is queued, nothing else of the body is kept or logged.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the ingress login | required |
//! | `AGENT_CALL_INGRESS_ENABLED` | must be `1`: the listener exists only with its flag | required |
//! | `CALLPROV_WEBHOOK_SECRET_FILE` | the signing secret, owner-only, at least 16 bytes | required |
//! | `CALL_INGRESS_LISTEN_ADDR` | a loopback socket address | `127.0.0.1:8003` |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! It refuses to start with a model key, the browser control-plane credential, the owner's
//! bearer, scopes, or any call-provider API key in its environment.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
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
/// The shortest signing secret accepted.
const MIN_SECRET_BYTES: usize = 16;
const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8003";

struct Config {
    database_url: String,
    listen: SocketAddr,
    secret: Vec<u8>,
    log_level: tracing::Level,
}

fn config() -> Result<Config, String> {
    let get = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    match get("AGENT_CALL_INGRESS_ENABLED").as_deref() {
        Some("1") => {}
        None | Some("0") => return Err("AGENT_CALL_INGRESS_ENABLED is not 1: the ingress listener is off".into()),
        Some(other) => return Err(format!("AGENT_CALL_INGRESS_ENABLED must be 0 or 1, got `{other}`")),
    }
    let database_url = get("DATABASE_URL").ok_or("DATABASE_URL is required")?;
    let listen_text = get("CALL_INGRESS_LISTEN_ADDR").unwrap_or_else(|| DEFAULT_LISTEN_ADDR.into());
    let listen: SocketAddr = listen_text
        .parse()
        .map_err(|_| format!("CALL_INGRESS_LISTEN_ADDR `{listen_text}` is not a socket address"))?;
    if !listen.ip().is_loopback() {
        return Err(format!(
            "CALL_INGRESS_LISTEN_ADDR `{listen}` is not a loopback address; the reverse proxy forwards /webhooks/callprov to loopback"
        ));
    }
    let secret_path = get("CALLPROV_WEBHOOK_SECRET_FILE").ok_or("CALLPROV_WEBHOOK_SECRET_FILE is required")?;
    let mut secret = hardening::secret_file::read_owner_only(Path::new(&secret_path))
        .map_err(|error| format!("CALLPROV_WEBHOOK_SECRET_FILE: {error}"))?;
    while secret.last().is_some_and(|byte| *byte == b'\n' || *byte == b'\r') {
        secret.pop();
    }
    if secret.len() < MIN_SECRET_BYTES {
        return Err(format!(
            "CALLPROV_WEBHOOK_SECRET_FILE: the secret must be at least {MIN_SECRET_BYTES} bytes"
        ));
    }
    let log_level =
        role::log_level(get("LOG_LEVEL").as_deref()).map_err(|reason| format!("LOG_LEVEL is invalid: {reason}"))?;
    Ok(Config {
        database_url,
        listen,
        secret,
        log_level,
    })
}

fn main() -> ExitCode {
    let config = match role::prepare("steward-call-ingress", role::RoleKind::CallIngress, config) {
        Ok(config) => config,
        Err(code) => return code,
    };
    role::run(config.log_level, serve(config))
}

struct Ingress {
    store: Store,
    secret: Vec<u8>,
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let store = Store::connect_lazy(&config.database_url, 4).context("configure the database pool")?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listen on {}", config.listen))?;
    let state = Arc::new(Ingress {
        store,
        secret: config.secret,
    });
    let app = Router::new()
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
        .with_state(state);
    tracing::info!(addr = %listener.local_addr()?, "steward-call-ingress listening");
    role::ready();
    axum::serve(listener, app)
        .with_graceful_shutdown(role::shutdown_signal())
        .await
        .context("serve http")
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
fn signature(headers: &HeaderMap) -> Option<[u8; 32]> {
    let text = headers.get("x-webhook-signature")?.as_bytes();
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
    let Some(claimed) = signature(&headers) else {
        return problem(
            StatusCode::UNAUTHORIZED,
            "webhook_signature_invalid",
            "X-Webhook-Signature must be the 64-character lowercase hex HMAC-SHA256 of the body",
        );
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&ingress.secret) else {
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the signing key is unusable",
        );
    };
    mac.update(&body);
    // Constant-time comparison.
    if mac.verify_slice(&claimed).is_err() {
        tracing::warn!("webhook refused: signature mismatch");
        return problem(
            StatusCode::UNAUTHORIZED,
            "webhook_signature_invalid",
            "the signature does not match the body",
        );
    }
    let call_id = match serde_json::from_slice::<Delivery>(&body) {
        Ok(delivery) if valid_call_id(&delivery.call_id) => delivery.call_id,
        _ => {
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
