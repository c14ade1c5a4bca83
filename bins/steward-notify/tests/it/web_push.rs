//! Web Push delivery against a push-service stand-in: a real HTTPS server that checks the VAPID
//! JWT (RFC 8292) against the server's public key and keeps each encrypted body, which the test
//! decrypts (RFC 8291) with the subscription keys it generated, as a browser would.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use notify::dispatch::{Dispatcher, Providers};
use notify::webpush::{WebPush, WebPushConfig};
use p256::pkcs8::DecodePrivateKey;
use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};
use serde_json::{Value, json};
use testkit::TestDatabase;

use crate::support_and_delivery::{Received, receive};

const SUBJECT: &str = "mailto:owner@example.test";

struct PushService {
    url: String,
    ca_pem: String,
    received: Arc<Mutex<Vec<Received>>>,
    /// While set, `/busy/…` answers 429.
    throttling: Arc<AtomicBool>,
}

/// Answers by the endpoint's path: `/gone/…` 410, `/busy/…` 429 while throttling, else 201.
async fn start_push_service(application_server_key: String) -> PushService {
    let (acceptor, ca_pem) = testkit::tls::localhost(&[b"http/1.1"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let origin = format!("https://localhost:{port}");
    let received = Arc::new(Mutex::new(Vec::new()));
    let throttling = Arc::new(AtomicBool::new(true));
    let (log, throttle) = (received.clone(), throttling.clone());
    let key = application_server_key.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, log, throttle, key, origin) = (
                acceptor.clone(),
                log.clone(),
                throttle.clone(),
                key.clone(),
                origin.clone(),
            );
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (log, throttle, key, origin) = (log.clone(), throttle.clone(), key.clone(), origin.clone());
                    async move { Ok::<_, Infallible>(answer(request, &log, &throttle, &key, &origin).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    PushService {
        url: format!("https://localhost:{port}"),
        ca_pem,
        received,
        throttling,
    }
}

/// Checks `Authorization: vapid t=<jwt>, k=<key>` (RFC 8292 §3).
fn vapid_valid(authorization: Option<&str>, key: &str, origin: &str) -> bool {
    let Some(rest) = authorization.and_then(|value| value.strip_prefix("vapid ")) else {
        return false;
    };
    let mut token = None;
    let mut public = None;
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(value) = part.strip_prefix("t=") {
            token = Some(value);
        } else if let Some(value) = part.strip_prefix("k=") {
            public = Some(value);
        }
    }
    let (Some(token), Some(public)) = (token, public) else {
        return false;
    };
    if public != key {
        return false;
    }
    let point = URL_SAFE_NO_PAD.decode(public).expect("key");
    let decoding = DecodingKey::from_ec_components(
        &URL_SAFE_NO_PAD.encode(&point[1..33]),
        &URL_SAFE_NO_PAD.encode(&point[33..65]),
    )
    .expect("decoding key");
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_audience(&[origin]);
    validation.set_required_spec_claims(&["exp", "aud", "sub"]);
    let Ok(claims) = jsonwebtoken::decode::<Value>(token, &decoding, &validation) else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let exp = claims.claims["exp"].as_u64().unwrap_or(0);
    claims.claims["sub"] == SUBJECT && exp > now && exp <= now + 24 * 3600
}

async fn answer(
    request: Request<Incoming>,
    log: &Mutex<Vec<Received>>,
    throttling: &AtomicBool,
    key: &str,
    origin: &str,
) -> Response<Full<Bytes>> {
    let received = receive(request, log, |authorization| vapid_valid(authorization, key, origin)).await;
    let path = received.path;
    let status = if !received.authorized {
        403
    } else if path.starts_with("/gone/") {
        410
    } else if path.starts_with("/busy/") && throttling.load(Ordering::SeqCst) {
        429
    } else {
        201
    };
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .expect("response")
}

/// A browser's subscription: its endpoint, and the keys the test decrypts with.
struct Subscription {
    endpoint: String,
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Subscription {
    fn new(service: &PushService, path: &str) -> Subscription {
        let pair = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let secret = p256::SecretKey::from_pkcs8_pem(&pair.serialize_pem()).expect("p256 key");
        Subscription {
            endpoint: format!("{}{path}", service.url),
            secret,
            auth: *uuid::Uuid::new_v4().as_bytes(),
        }
    }

    fn p256dh(&self) -> String {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        URL_SAFE_NO_PAD.encode(self.secret.public_key().to_encoded_point(false).as_bytes())
    }

    /// What the browser's service worker would read.
    fn decrypt(&self, body: &[u8]) -> Value {
        let auth = web_push_native::Auth::clone_from_slice(&self.auth);
        let plain = web_push_native::decrypt(body.to_vec(), &self.secret, &auth).expect("decrypts");
        serde_json::from_slice(&plain).expect("json")
    }
}

struct Setup {
    db: TestDatabase,
    service: PushService,
    dispatcher: Dispatcher,
    session: uuid::Uuid,
}

async fn setup() -> Setup {
    // The key as an operator makes it (`steward-preflight --generate-vapid-key`).
    let dir = std::env::temp_dir().join(format!("steward-vapid-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).expect("dir");
    let key = preflight::vapid::generate(&dir.join("vapid-key")).expect("vapid key");
    let vapid_pem = std::fs::read(dir.join("vapid-key")).expect("read");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        notify::webpush::application_server_key(&vapid_pem).expect("public key"),
        key
    );
    let service = start_push_service(key.clone()).await;
    let db = TestDatabase::new().await;
    let session = crate::support_and_delivery::owner_session(&db).await;
    let web_push = WebPush::new(WebPushConfig {
        key_pem: vapid_pem,
        subject: SUBJECT.into(),
        extra_root_pem: Some(service.ca_pem.clone().into_bytes()),
    })
    .expect("web push client");
    assert_eq!(web_push.public_key(), key);
    let dispatcher = Dispatcher {
        store: db.store_as("notify").await,
        providers: Providers {
            apns: None,
            web_push: Some(web_push),
        },
        worker: "notify-test".into(),
        lease_seconds: 30,
    };
    Setup {
        db,
        service,
        dispatcher,
        session,
    }
}

async fn subscribe(setup: &Setup, client: &str, path: &str) -> Subscription {
    let subscription = Subscription::new(&setup.service, path);
    store::Store::from_pool(setup.db.pool.clone())
        .register_device(
            &domain::ids::PrincipalId::owner(),
            client,
            &store::PushAddress::WebPush {
                endpoint: subscription.endpoint.clone(),
                p256dh: subscription.p256dh(),
                auth: URL_SAFE_NO_PAD.encode(subscription.auth),
            },
        )
        .await
        .expect("device");
    subscription
}

/// A notification raised now, due after the spec's 30-second delay.
async fn raise(setup: &Setup, kind: &str) -> uuid::Uuid {
    sqlx::query_scalar(
        "INSERT INTO notification_outbox (id, kind, session_id, deliver_after)
         VALUES (gen_random_uuid(), $1, $2, now() + interval '30 seconds') RETURNING id",
    )
    .bind(kind)
    .bind(setup.session)
    .fetch_one(&setup.db.pool)
    .await
    .expect("outbox row")
}

fn received(setup: &Setup) -> Vec<Received> {
    setup.service.received.lock().expect("lock").clone()
}

fn in_seconds(seconds: i64) -> jiff::Timestamp {
    jiff::Timestamp::now() + jiff::SignedDuration::from_secs(seconds)
}

#[tokio::test]
async fn exactly_the_closed_dictionary_arrives_encrypted_and_signed_after_the_delay() {
    let setup = setup().await;
    let phone = subscribe(&setup, "phone-browser", "/push/phone").await;
    let id = raise(&setup, "question").await;

    let early = setup.dispatcher.pass(jiff::Timestamp::now()).await.expect("pass");
    assert_eq!(
        early,
        notify::dispatch::Pass::default(),
        "nothing before the 30 seconds"
    );
    assert!(received(&setup).is_empty());

    let pass = setup.dispatcher.pass(in_seconds(31)).await.expect("pass");
    assert_eq!(pass.delivered, 1);
    let requests = received(&setup);
    assert_eq!(requests.len(), 1);
    let push = &requests[0];
    assert_eq!(push.path, "/push/phone");
    assert!(
        push.authorized,
        "an ES256 VAPID JWT for this origin, with the contact and the key"
    );
    assert_eq!(push.header("content-encoding"), Some("aes128gcm"));
    assert_eq!(push.header("ttl"), Some("86400"));
    assert_eq!(push.header("urgency"), Some("high"));
    assert_eq!(push.header("topic"), Some(id.simple().to_string().as_str()));
    assert!(push.body.len() <= 4096, "one record");
    assert_eq!(
        phone.decrypt(&push.body),
        json!({
            "alert": "Your agent has a question",
            "steward": { "v": 1, "kind": "question", "notification_id": id, "session_id": setup.session },
        }),
        "the alert text and the closed tap dictionary, nothing else"
    );

    let again = setup.dispatcher.pass(in_seconds(60)).await.expect("pass");
    assert_eq!(again, notify::dispatch::Pass::default());
    assert_eq!(received(&setup).len(), 1, "nothing is sent twice");
}

#[tokio::test]
async fn a_gone_subscription_is_retired_a_throttled_one_retried_and_obsolete_alerts_withdrawn() {
    let setup = setup().await;
    let laptop = subscribe(&setup, "laptop", "/busy/laptop").await;
    let _old = subscribe(&setup, "old-browser", "/gone/old").await;
    let phone = subscribe(&setup, "phone", "/push/phone").await;
    let id = raise(&setup, "approval").await;

    let pass = setup.dispatcher.pass(in_seconds(31)).await.expect("pass");
    assert_eq!((pass.delivered, pass.devices_gone, pass.retried), (1, 1, 1));
    let devices: Vec<(String, bool, Option<String>)> =
        sqlx::query_as("SELECT client_device_id, active, deactivated_reason FROM devices ORDER BY client_device_id")
            .fetch_all(&setup.db.pool)
            .await
            .expect("devices");
    assert_eq!(
        devices,
        [
            ("laptop".to_owned(), true, None),
            ("old-browser".to_owned(), false, Some("WebPush410".to_owned())),
            ("phone".to_owned(), true, None),
        ],
        "410 retires the device; 429 keeps it"
    );

    // The retry, once due, goes to the throttled device alone; the retired one is not tried.
    setup.service.throttling.store(false, Ordering::SeqCst);
    sqlx::query("UPDATE notification_outbox SET claim_expires_at = now() - interval '1 second'")
        .execute(&setup.db.pool)
        .await
        .expect("expire the backoff");
    let pass = setup.dispatcher.pass(in_seconds(40)).await.expect("pass");
    assert_eq!((pass.delivered, pass.devices_gone, pass.retried), (1, 0, 0));
    let paths: Vec<String> = received(&setup).into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths.iter().filter(|p| *p == "/busy/laptop").count(),
        2,
        "429, then delivered"
    );
    assert_eq!(paths.iter().filter(|p| *p == "/gone/old").count(), 1);
    assert_eq!(paths.iter().filter(|p| *p == "/push/phone").count(), 1);
    let retried = received(&setup).pop().expect("retry");
    assert_eq!(laptop.decrypt(&retried.body)["steward"]["kind"], "approval");

    // Answered elsewhere: both browsers that show it are told to close it.
    sqlx::query("UPDATE notification_outbox SET obsolete_at = now() WHERE id = $1")
        .bind(id)
        .execute(&setup.db.pool)
        .await
        .expect("obsolete");
    let pass = setup.dispatcher.pass(in_seconds(41)).await.expect("pass");
    assert_eq!(pass.withdrawn, 1);
    let withdrawals: Vec<Received> = received(&setup).into_iter().skip(4).collect();
    assert_eq!(withdrawals.len(), 2, "the two browsers it reached");
    for withdrawal in &withdrawals {
        let subscription = if withdrawal.path == "/push/phone" {
            &phone
        } else {
            &laptop
        };
        assert_eq!(
            subscription.decrypt(&withdrawal.body),
            json!({ "steward": { "v": 1, "kind": "withdrawn", "notification_id": id } })
        );
        assert_eq!(withdrawal.header("urgency"), Some("normal"));
        assert_eq!(
            withdrawal.header("topic"),
            Some(id.simple().to_string().as_str()),
            "replaces the alert at the push service if it was still waiting there"
        );
    }
}

#[test]
fn no_content_field_can_reach_a_web_push_payload() {
    let secret = "Wire the money to hunter2@example.com".to_owned();
    let due = store::DueNotification {
        notification: store::NotificationRow {
            id: uuid::Uuid::nil(),
            kind: domain::notification::NotificationKind::ScheduleOutcome,
            session_id: Some(uuid::Uuid::nil()),
            run_id: Some(uuid::Uuid::nil()),
            approval_id: None,
            question_id: None,
            occurrence_id: Some(uuid::Uuid::nil()),
            call_id: None,
            deliver_after: jiff::Timestamp::UNIX_EPOCH,
            created_at: jiff::Timestamp::UNIX_EPOCH,
        },
        devices: Vec::new(),
        tool: Some(secret.clone()),
        outcome: Some(store::ScheduleOutcome {
            state: domain::schedule::OccurrenceState::Failed,
            reason: Some(secret.clone()),
            title: Some("Morning brief".into()),
            scheduled_local: Some("2026-11-24 07:00".into()),
        }),
    };
    let payload: Value = serde_json::from_slice(&notify::payload::web_alert(&due).expect("fits")).expect("json");
    let text = payload.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    let keys: Vec<&String> = payload.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["alert", "steward"], "a closed dictionary");
    let tap: Vec<&String> = payload["steward"].as_object().expect("tap").keys().collect();
    for key in tap {
        assert!(
            [
                "v",
                "kind",
                "notification_id",
                "session_id",
                "run_id",
                "approval_id",
                "question_id",
                "occurrence_id",
                "call_id"
            ]
            .contains(&key.as_str()),
            "{key} is not in the version-1 tap dictionary"
        );
    }
    assert!(
        payload["alert"]
            .as_str()
            .expect("text")
            .contains("Morning brief (2026-11-24 07:00)"),
        "a schedule outcome names the revision's title and the scheduled time"
    );
}

#[tokio::test]
async fn a_vapid_token_is_reused_per_push_service() {
    let setup = setup().await;
    let web_push = setup.dispatcher.providers.web_push.as_ref().expect("web push");
    let first = web_push.vapid_token("https://push.example.test").expect("token");
    assert_eq!(first, web_push.vapid_token("https://push.example.test").expect("token"));
    assert_ne!(
        first,
        web_push.vapid_token("https://other.example.test").expect("token")
    );
}
