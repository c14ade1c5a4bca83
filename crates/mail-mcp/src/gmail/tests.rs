//! The client against a real local HTTP server: what each provider answer comes to, and
//! how many requests reached the provider (a write or send: never more than one).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as Status};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::*;

/// What the provider does with the next API request (then `Ok`).
#[derive(Clone, Copy, Debug)]
enum Answer {
    Status(u16),
    UsageLimit,
    RetryAfter(u64),
    Slow(Duration),
    Garbled,
}

#[derive(Default)]
struct Provider {
    answers: Mutex<VecDeque<Answer>>,
    api_requests: AtomicUsize,
    token_requests: AtomicUsize,
    /// The one access token the API accepts now.
    valid: Mutex<Option<String>>,
    /// What the token endpoint does: `None` refuses the grant, else the scope it reports.
    grant: Mutex<Option<String>>,
}

async fn token(State(provider): State<Arc<Provider>>) -> Response {
    let issued = provider.token_requests.fetch_add(1, Ordering::SeqCst) + 1;
    let Some(scope) = provider.grant.lock().expect("lock").clone() else {
        let body = json!({ "error": "invalid_grant", "error_description": "Token has been expired or revoked." });
        return (Status::BAD_REQUEST, axum::Json(body)).into_response();
    };
    let value = format!("access-{issued}");
    *provider.valid.lock().expect("lock") = Some(value.clone());
    axum::Json(json!({ "access_token": value, "expires_in": 3599, "scope": scope, "token_type": "Bearer" }))
        .into_response()
}

async fn api(State(provider): State<Arc<Provider>>, headers: HeaderMap) -> Response {
    provider.api_requests.fetch_add(1, Ordering::SeqCst);
    let valid = provider.valid.lock().expect("lock").clone();
    let presented = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if valid.is_none() || presented != valid.as_deref() {
        return (Status::UNAUTHORIZED, axum::Json(json!({ "error": { "code": 401 } }))).into_response();
    }
    let answer = provider.answers.lock().expect("lock").pop_front();
    let fail = |status: u16, body: Value| (Status::from_u16(status).expect("status"), axum::Json(body)).into_response();
    match answer {
        None => axum::Json(json!({ "id": "m1", "threadId": "t1" })).into_response(),
        Some(Answer::Status(status)) => fail(status, json!({ "error": { "code": status, "message": "scripted" } })),
        Some(Answer::UsageLimit) => fail(
            403,
            json!({ "error": { "code": 403, "message": "quota", "errors": [{ "reason": "userRateLimitExceeded" }] } }),
        ),
        Some(Answer::RetryAfter(seconds)) => {
            (Status::TOO_MANY_REQUESTS, [("retry-after", seconds.to_string())], "{}").into_response()
        }
        Some(Answer::Slow(delay)) => {
            tokio::time::sleep(delay).await;
            axum::Json(json!({ "id": "late" })).into_response()
        }
        Some(Answer::Garbled) => {
            (Status::OK, [("content-type", "application/json")], "{\"id\": \"m1\"").into_response()
        }
    }
}

struct Setup {
    provider: Arc<Provider>,
    endpoints: Endpoints,
    _server: tokio::task::JoinHandle<()>,
}

async fn serve(router: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.expect("serve");
    });
    (url, server)
}

async fn setup(scope: MailScope, answers: &[Answer]) -> Setup {
    let provider = Arc::new(Provider::default());
    *provider.grant.lock().expect("lock") = Some(scope.url().to_owned());
    provider.answers.lock().expect("lock").extend(answers.iter().copied());
    let router = axum::Router::new()
        .route("/token", post(token))
        .route("/gmail/v1/users/me/{*path}", any(api))
        .with_state(provider.clone());
    let (url, server) = serve(router).await;
    Setup {
        provider,
        endpoints: Endpoints {
            api_base_url: url.clone(),
            token_url: format!("{url}/token"),
            read_attempts: 3,
            read_backoff: Duration::from_millis(1),
            request_timeout: Duration::from_secs(5),
            quota_units_per_second: 250.0,
        },
        _server: server,
    }
}

fn document(scope: MailScope) -> CredentialDocument {
    let body =
        json!({ "client_id": "client", "client_secret": "secret", "refresh_token": "refresh", "scope": scope.url() });
    CredentialDocument::parse(body.to_string().as_bytes(), scope, None).expect("document")
}

fn client(endpoints: &Endpoints) -> GmailClient {
    GmailClient::new(endpoints.clone()).expect("client")
}

fn requests(setup: &Setup) -> (usize, usize) {
    (
        setup.provider.api_requests.load(Ordering::SeqCst),
        setup.provider.token_requests.load(Ordering::SeqCst),
    )
}

async fn send_once(answers: &[Answer]) -> (Result<Value, MailError>, usize) {
    let setup = setup(MailScope::Send, answers).await;
    let send = document(MailScope::Send);
    let credential = Credential {
        account_id: "personal",
        document: &send,
    };
    let mut endpoints = setup.endpoints.clone();
    endpoints.request_timeout = Duration::from_millis(300);
    let result = client(&endpoints)
        .dispatch(credential, "messages/send", &json!({ "raw": "eA" }))
        .await;
    (result, requests(&setup).0)
}

#[tokio::test]
async fn a_send_is_made_once_whatever_the_provider_answers() {
    let (sent, requests) = send_once(&[]).await;
    assert_eq!((sent.expect("sent")["id"].as_str(), requests), (Some("m1"), 1));

    for (answers, code) in [
        // After dispatch, nobody knows: a 5xx, a timeout, an answer cut off.
        (vec![Answer::Status(503)], "mail.outcome_unknown"),
        (vec![Answer::Status(500)], "mail.outcome_unknown"),
        (vec![Answer::Slow(Duration::from_secs(3))], "mail.outcome_unknown"),
        (vec![Answer::Garbled], "mail.outcome_unknown"),
        // Refusals prove nothing happened; they are not retried either.
        (vec![Answer::Status(400)], "mail.rejected"),
        (vec![Answer::Status(429)], "mail.rate_limited"),
        (vec![Answer::UsageLimit], "mail.rate_limited"),
    ] {
        let (result, requests) = send_once(&answers).await;
        let error = result.expect_err("not sent");
        assert_eq!((error.code(), requests), (code, 1), "{answers:?}: {error}");
    }
}

#[tokio::test]
async fn a_connection_lost_after_the_request_was_written_is_an_unknown_outcome() {
    let setup = setup(MailScope::Send, &[]).await;
    // An API that reads the whole request, then drops the connection without answering.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let received = Arc::new(AtomicUsize::new(0));
    let seen = received.clone();
    let dropper = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            while let Ok(read @ 1..) = stream.read(&mut buffer).await {
                request.extend_from_slice(&buffer[..read]);
                if request.windows(4).any(|window| window == b"\r\n\r\n") && request.ends_with(b"}") {
                    break;
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    let mut endpoints = setup.endpoints.clone();
    endpoints.api_base_url = format!("http://{address}");
    let send = document(MailScope::Send);
    let credential = Credential {
        account_id: "personal",
        document: &send,
    };
    let error = client(&endpoints)
        .dispatch(credential, "messages/send", &json!({ "raw": "eA" }))
        .await
        .expect_err("unknown");
    assert_eq!(error.code(), "mail.outcome_unknown", "{error}");
    assert_eq!(received.load(Ordering::SeqCst), 1, "written once, never again");
    dropper.abort();

    // A refused connection proves the request never left: nothing happened.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    endpoints.api_base_url = format!("http://{}", closed.local_addr().expect("address"));
    drop(closed);
    let error = client(&endpoints)
        .dispatch(credential, "messages/send", &json!({ "raw": "eA" }))
        .await
        .expect_err("unavailable");
    assert_eq!(error.code(), "mail.unavailable", "{error}");
}

#[tokio::test]
async fn an_expired_access_token_is_refreshed_once_and_the_send_made_once() {
    let setup = setup(MailScope::Send, &[]).await;
    let send = document(MailScope::Send);
    let credential = Credential {
        account_id: "personal",
        document: &send,
    };
    let client = client(&setup.endpoints);
    client.dispatch(credential, "drafts", &json!({})).await.expect("first");
    // The provider forgets the cached token: a 401 proves the request was not acted on.
    *setup.provider.valid.lock().expect("lock") = None;
    let answer = client.dispatch(credential, "messages/send", &json!({})).await;
    assert_eq!(answer.expect("sent")["id"], "m1");
    assert_eq!(
        requests(&setup),
        (3, 2),
        "one refused request, one accepted; two tokens"
    );
}

#[test]
fn requests_are_paced_to_the_per_user_quota() {
    let rate = 250.0;
    let start = Instant::now();
    let mut bucket = QuotaBucket::full(rate, start);
    // A second's worth goes at once: 25 thread reads of 10 units.
    for _ in 0..25 {
        assert_eq!(bucket.take(quota_units("threads/t1"), rate, start), Duration::ZERO);
    }
    // Then each waits for its units: 40 ms apart.
    let waits: Vec<u128> = (0..3)
        .map(|_| bucket.take(quota_units("threads"), rate, start).as_millis())
        .collect();
    assert_eq!(waits, [40, 80, 120]);
    // Idle time refills it, to a second's worth at most.
    let later = start + Duration::from_secs(10);
    assert_eq!(bucket.take(quota_units("messages/send"), rate, later), Duration::ZERO);
    assert_eq!(bucket.take(150.0, rate, later), Duration::ZERO);
    assert_eq!(bucket.take(quota_units("labels"), rate, later).as_millis(), 4);
    assert_eq!(
        [
            quota_units("labels"),
            quota_units("drafts"),
            quota_units("messages/send")
        ],
        [1.0, 10.0, 100.0]
    );
}

#[tokio::test]
async fn reads_back_off_and_tokens_are_cached_and_checked() {
    let read = document(MailScope::Read);
    let credential = Credential {
        account_id: "personal",
        document: &read,
    };
    // Two throttled answers are waited out; the token is fetched once for all reads.
    let throttled = setup(MailScope::Read, &[Answer::Status(503), Answer::Status(429)]).await;
    let reader = client(&throttled.endpoints);
    reader.read(credential, "labels", &[]).await.expect("third attempt");
    reader.read(credential, "labels", &[]).await.expect("cached token");
    assert_eq!(requests(&throttled), (4, 1));

    for (answers, code, api_requests) in [
        // Out of attempts (three here).
        (vec![Answer::Status(503); 3], "mail.unavailable", 3),
        (vec![Answer::UsageLimit; 3], "mail.rate_limited", 3),
        // A wait longer than twenty seconds is not waited for.
        (vec![Answer::RetryAfter(3600)], "mail.rate_limited", 1),
        // A refusal is final.
        (vec![Answer::Status(404)], "mail.rejected", 1),
    ] {
        let setup = setup(MailScope::Read, &answers).await;
        let error = client(&setup.endpoints)
            .read(credential, "threads", &[("q", "in:sent".to_owned())])
            .await
            .expect_err("fails");
        assert_eq!((error.code(), requests(&setup).0), (code, api_requests), "{answers:?}");
    }

    // A refused refresh token, or a grant without the document's scope: rejected, and no
    // API request is made.
    for grant in [None, Some(MailScope::Send.url().to_owned())] {
        let setup = setup(MailScope::Read, &[]).await;
        *setup.provider.grant.lock().expect("lock") = grant;
        let error = client(&setup.endpoints)
            .read(credential, "labels", &[])
            .await
            .expect_err("rejected");
        assert_eq!((error, requests(&setup)), (MailError::CredentialRejected, (0, 1)));
    }
}
