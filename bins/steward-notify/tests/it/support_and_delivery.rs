//! Delivery against a real HTTP/2 TLS server speaking the APNs provider API: provider
//! token signature, headers, payload size and shape, device deactivation, retries and
//! withdrawals. Keys and certificates are generated when the test runs.

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use notify::apns::{Apns, ApnsConfig};
use notify::dispatch::{Dispatcher, Providers};
use serde_json::{Value, json};
use testkit::TestDatabase;

/// One request a provider stand-in (APNs, a push service) received.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Whether its `Authorization` (the provider token, the VAPID JWT) checked out.
    pub(crate) authorized: bool,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Reads `request` whole and records it in `log`; `authorized` checks its `Authorization`.
pub(crate) async fn receive(
    request: Request<Incoming>,
    log: &Mutex<Vec<Received>>,
    authorized: impl FnOnce(Option<&str>) -> bool,
) -> Received {
    let path = request.uri().path().to_owned();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_owned()))
        .collect();
    let authorized = authorized(request.headers().get("authorization").and_then(|v| v.to_str().ok()));
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let received = Received {
        path,
        headers,
        body,
        authorized,
    };
    log.lock().expect("lock").push(received.clone());
    received
}

pub(crate) struct FakeApns {
    pub(crate) url: String,
    pub(crate) ca_pem: String,
    pub(crate) received: Arc<Mutex<Vec<Received>>>,
    /// While set, the server holds every request without answering.
    pub(crate) hold: Arc<std::sync::atomic::AtomicBool>,
}

pub(crate) async fn start_fake(public_key_pem: String, team: &'static str, key_id: &'static str) -> FakeApns {
    let (acceptor, ca_pem) = testkit::tls::localhost(&[b"h2"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let hold = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let log = received.clone();
    let holding = hold.clone();
    let decoding = DecodingKey::from_ec_pem(public_key_pem.as_bytes()).expect("public key");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, log, decoding, holding) = (acceptor.clone(), log.clone(), decoding.clone(), holding.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (log, decoding, holding) = (log.clone(), decoding.clone(), holding.clone());
                    async move {
                        let answered = answer(request, &log, &decoding, team, key_id).await;
                        while holding.load(std::sync::atomic::Ordering::SeqCst) {
                            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        }
                        Ok::<_, Infallible>(answered)
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    FakeApns {
        url: format!("https://localhost:{port}"),
        ca_pem,
        received,
        hold,
    }
}

async fn answer(
    request: Request<Incoming>,
    log: &Mutex<Vec<Received>>,
    decoding: &DecodingKey,
    team: &str,
    key_id: &str,
) -> Response<Full<Bytes>> {
    let received = receive(request, log, |authorization| {
        authorization
            .and_then(|v| v.strip_prefix("bearer "))
            .is_some_and(|jwt| {
                let mut validation = Validation::new(Algorithm::ES256);
                validation.required_spec_claims.clear();
                validation.validate_exp = false;
                let header = jsonwebtoken::decode_header(jwt).ok();
                let claims = jsonwebtoken::decode::<Value>(jwt, decoding, &validation).ok();
                header.is_some_and(|h| h.kid.as_deref() == Some(key_id))
                    && claims.is_some_and(|c| c.claims["iss"] == team && c.claims["iat"].is_u64())
            })
    })
    .await;
    let path = received.path;
    let (status, reason) = if path.ends_with(&"d".repeat(64)) {
        (410, Some("Unregistered"))
    } else if path.ends_with(&"b".repeat(64)) {
        (429, Some("TooManyRequests"))
    } else {
        (200, None)
    };
    let body = reason
        .map(|reason| json!({ "reason": reason }).to_string())
        .unwrap_or_default();
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(body)))
        .expect("response")
}

pub(crate) struct Setup {
    pub(crate) db: TestDatabase,
    pub(crate) fake: FakeApns,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) session: uuid::Uuid,
    pub(crate) signing_pem: String,
}

pub(crate) async fn setup() -> Setup {
    let signing = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("signing key");
    let fake = start_fake(signing.public_key_pem(), "TEAM123456", "KEY1234567").await;
    let db = TestDatabase::new().await;
    let session = owner_session(&db).await;
    let apns = Apns::new(ApnsConfig {
        team_id: "TEAM123456".into(),
        key_id: "KEY1234567".into(),
        key_pem: signing.serialize_pem().into_bytes(),
        topic: "dev.steward.client".into(),
        sandbox_url: format!("{}/sandbox", fake.url),
        production_url: format!("{}/production", fake.url),
        extra_root_pem: Some(fake.ca_pem.clone().into_bytes()),
    })
    .expect("apns client");
    let dispatcher = Dispatcher {
        store: db.store_as("notify").await,
        providers: Providers {
            apns: Some(apns),
            web_push: None,
        },
        worker: "notify-test".into(),
        lease_seconds: 30,
    };
    Setup {
        db,
        fake,
        dispatcher,
        session,
        signing_pem: signing.serialize_pem(),
    }
}

/// A session of the owner, made as the api would make it; the dispatcher uses the notify login.
pub(crate) async fn owner_session(db: &TestDatabase) -> uuid::Uuid {
    let store = store::Store::from_pool(db.pool.clone());
    let flags = domain::flags::FeatureFlags::default();
    let agents =
        domain::agent::AgentRegistry::compose(vec![domain::agent::AgentDefinition::builtin_default()], &flags, None)
            .expect("agents");
    let owner = domain::ids::PrincipalId::owner();
    let session = store
        .create_session(store::NewSession {
            principal: &owner,
            agent: agents.get("default").expect("agent"),
            title: None,
            metadata: json!({}),
            browser_profile: None,
        })
        .await
        .expect("session");
    session.id.as_uuid()
}

pub(crate) async fn device(setup: &Setup, client: &str, token: &str, environment: &str) {
    // Devices are registered through the api; the notify login may only deactivate them.
    store::Store::from_pool(setup.db.pool.clone())
        .register_device(
            &domain::ids::PrincipalId::owner(),
            client,
            &store::PushAddress::Apns {
                token: token.into(),
                environment: environment.into(),
            },
        )
        .await
        .expect("device");
}

pub(crate) async fn notification(setup: &Setup, kind: &str) -> uuid::Uuid {
    sqlx::query_scalar(
        "INSERT INTO notification_outbox (id, kind, session_id, deliver_after) VALUES (gen_random_uuid(), $1, $2, now())
         RETURNING id",
    )
    .bind(kind)
    .bind(setup.session)
    .fetch_one(&setup.db.pool)
    .await
    .expect("outbox row")
}

pub(crate) fn received(setup: &Setup) -> Vec<Received> {
    setup.fake.received.lock().expect("lock").clone()
}

#[tokio::test]
async fn pushes_reach_live_devices_with_signed_tokens_and_gone_devices_are_deactivated() {
    let setup = setup().await;
    device(&setup, "phone", &"a".repeat(64), "sandbox").await;
    device(&setup, "old-tablet", &"d".repeat(64), "production").await;
    let id = notification(&setup, "question").await;

    let pass = setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
    assert_eq!((pass.delivered, pass.devices_gone, pass.retried), (1, 1, 0));
    let requests = received(&setup);
    assert_eq!(requests.len(), 2);
    let live = requests
        .iter()
        .find(|r| r.path == format!("/sandbox/3/device/{}", "a".repeat(64)))
        .expect("sandbox host");
    assert!(
        requests.iter().any(|r| r.path.starts_with("/production/")),
        "production devices go to the production host"
    );
    assert!(live.authorized, "ES256 provider token with kid and iss");
    assert_eq!(live.header("apns-topic"), Some("dev.steward.client"));
    assert_eq!(live.header("apns-push-type"), Some("alert"));
    assert_eq!(live.header("apns-priority"), Some("10"));
    assert_eq!(live.header("apns-collapse-id"), Some(id.to_string().as_str()));
    assert!(live.body.len() <= 4096);
    let payload: Value = serde_json::from_slice(&live.body).expect("json payload");
    assert_eq!(payload["aps"]["alert"]["body"], "Your agent has a question");
    assert_eq!(
        payload["steward"],
        json!({ "v": 1, "kind": "question", "notification_id": id, "session_id": setup.session })
    );

    let active: Vec<(String, bool)> =
        sqlx::query_as("SELECT client_device_id, active FROM devices ORDER BY client_device_id")
            .fetch_all(&setup.db.pool)
            .await
            .expect("devices");
    assert_eq!(
        active,
        [("old-tablet".to_owned(), false), ("phone".to_owned(), true)],
        "410 deactivates, never retried"
    );
    let delivered: bool = sqlx::query_scalar("SELECT delivered_at IS NOT NULL FROM notification_outbox")
        .fetch_one(&setup.db.pool)
        .await
        .expect("row");
    assert!(delivered);

    let again = setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
    assert_eq!(again, notify::dispatch::Pass::default());
    assert_eq!(received(&setup).len(), 2, "nothing is sent twice");
}

#[tokio::test]
async fn throttled_pushes_are_retried_later_and_obsolete_alerts_are_withdrawn() {
    let setup = setup().await;
    device(&setup, "busy-phone", &"b".repeat(64), "sandbox").await;
    device(&setup, "phone", &"a".repeat(64), "sandbox").await;
    let id = notification(&setup, "approval").await;
    let pass = setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
    assert_eq!((pass.delivered, pass.retried), (1, 1));
    let (delivered, retry_later): (bool, bool) =
        sqlx::query_as("SELECT delivered_at IS NOT NULL, claim_expires_at > now() FROM notification_outbox")
            .fetch_one(&setup.db.pool)
            .await
            .expect("row");
    assert_eq!(
        (delivered, retry_later),
        (false, true),
        "429 leaves it for a later attempt"
    );
    // The retry (once due) goes only to the device that has not received it.
    sqlx::query("UPDATE notification_outbox SET claim_expires_at = now() - interval '1 second'")
        .execute(&setup.db.pool)
        .await
        .expect("expire");
    sqlx::query("UPDATE devices SET push_token = $1 WHERE client_device_id = 'busy-phone'")
        .bind("c".repeat(64))
        .execute(&setup.db.pool)
        .await
        .expect("unthrottle");
    let pass = setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
    assert_eq!(pass.delivered, 1);
    let to_phone = received(&setup)
        .iter()
        .filter(|r| r.path.ends_with(&"a".repeat(64)))
        .count();
    assert_eq!(to_phone, 1, "the device that already had it got it once");

    // The approval was resolved: its delivered alert is withdrawn with a background push.
    sqlx::query("UPDATE notification_outbox SET obsolete_at = now() WHERE id = $1")
        .bind(id)
        .execute(&setup.db.pool)
        .await
        .expect("obsolete");
    let pass = setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
    assert_eq!(pass.withdrawn, 1);
    let withdrawals: Vec<Received> = received(&setup)
        .into_iter()
        .filter(|r| r.header("apns-push-type") == Some("background"))
        .collect();
    assert_eq!(withdrawals.len(), 2, "both devices that received it");
    let payload: Value = serde_json::from_slice(&withdrawals[0].body).expect("json");
    assert_eq!(
        payload["steward"],
        json!({ "v": 1, "kind": "withdrawn", "notification_id": id })
    );
    assert_eq!(withdrawals[0].header("apns-priority"), Some("5"));
}

#[test]
fn no_message_text_can_reach_a_payload() {
    // Whatever the tool name or outcome reason holds, only identifiers and fixed text get out.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet: Vec<char> = "abcXYZ019 .,:;!?'\"<>@/\\\n\té漢🙂_-".chars().collect();
    for _ in 0..2000 {
        let len = (next() % 40 + 5) as usize;
        let secret: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let secret = format!("{secret} hunter2");
        let notification = store::NotificationRow {
            id: uuid::Uuid::nil(),
            kind: domain::notification::NotificationKind::Approval,
            session_id: Some(uuid::Uuid::nil()),
            run_id: None,
            approval_id: None,
            question_id: None,
            occurrence_id: None,
            call_id: None,
            deliver_after: jiff::Timestamp::UNIX_EPOCH,
            created_at: jiff::Timestamp::UNIX_EPOCH,
        };
        let due = store::DueNotification {
            notification,
            devices: Vec::new(),
            tool: Some(secret.clone()),
            outcome: Some(store::ScheduleOutcome {
                state: domain::schedule::OccurrenceState::Failed,
                reason: Some(secret.clone()),
                title: Some("Digest".into()),
                scheduled_local: Some("2026-11-24 07:00".into()),
            }),
        };
        let bytes = notify::payload::alert(&due).expect("fits");
        let text = String::from_utf8(bytes).expect("utf-8");
        assert!(!text.contains("hunter2"), "{secret:?} leaked into {text}");
        assert!(text.len() <= 4096);
    }
}

#[tokio::test]
async fn the_provider_token_is_reused_not_signed_per_push() {
    let setup = setup().await;
    let apns = setup.dispatcher.providers.apns.as_ref().expect("apns");
    let first = apns.provider_token().expect("token");
    let second = apns.provider_token().expect("token");
    assert_eq!(first, second, "reused within the 20 to 60 minute window");
}

#[tokio::test]
async fn a_finished_call_is_announced_as_a_new_call_result() {
    let setup = setup().await;
    device(&setup, "phone", &"a".repeat(64), "sandbox").await;
    let call = uuid::Uuid::new_v4();
    let id: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO notification_outbox (id, kind, session_id, call_id, deliver_after)
         VALUES (gen_random_uuid(), 'call_finished', $1, $2, now()) RETURNING id",
    )
    .bind(setup.session)
    .bind(call)
    .fetch_one(&setup.db.pool)
    .await
    .expect("outbox row");
    assert_eq!(
        setup
            .dispatcher
            .pass(jiff::Timestamp::now())
            .await
            .expect("pass")
            .delivered,
        1
    );
    let push = received(&setup).pop().expect("push");
    let payload: Value = serde_json::from_slice(&push.body).expect("json");
    assert_eq!(payload["aps"]["alert"]["body"], "New call result");
    assert_eq!(
        payload["steward"],
        json!({ "v": 1, "kind": "call_finished", "notification_id": id, "session_id": setup.session, "call_id": call })
    );
}
