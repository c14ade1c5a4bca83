//! The one-click transport against a real HTTPS server on 127.0.0.1 (a certificate for the
//! newsletter hosts from an authority made at run time) and a real DNS server: what a request
//! carries, every refused address range, a rebinding resolver, the port, redirects, a slow and
//! an oversized answer, and the audit line.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use email::dns::Resolver;
use email::oneclick::{self, Decision, OneClickTransport, Outcome, Settings};
use testkit::dns::DnsServer;

const HOSTS: &[&str] = &["letters.example", "rebind.letters.example", "late.letters.example"];

/// One request the sender's server received.
#[derive(Clone, Debug)]
struct Received {
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone, Default)]
struct Sender {
    received: Arc<Mutex<Vec<Received>>>,
    /// Bytes of the oversized answer produced so far.
    produced: Arc<AtomicUsize>,
}

async fn answer(sender: Sender, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    sender.received.lock().expect("lock").push(Received {
        method,
        uri: uri.to_string(),
        headers,
        body,
    });
    match uri.path() {
        "/u/ok" => (StatusCode::OK, "You are unsubscribed.").into_response(),
        "/u/redirect" => (
            StatusCode::FOUND,
            [("location", "https://letters.example/u/ok?followed=1")],
        )
            .into_response(),
        "/u/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            (StatusCode::OK, "late").into_response()
        }
        "/u/huge" => {
            let produced = Arc::clone(&sender.produced);
            let chunks = futures_util::stream::iter(0..6400).map(move |_| {
                produced.fetch_add(16 * 1024, Ordering::SeqCst);
                Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; 16 * 1024]))
            });
            (StatusCode::OK, Body::from_stream(chunks)).into_response()
        }
        _ => (StatusCode::NOT_FOUND, "no such list").into_response(),
    }
}

use futures_util::StreamExt as _;

struct Setup {
    dns: DnsServer,
    sender: Sender,
    transport: OneClickTransport,
    /// The same, allowing nothing but public addresses.
    public_only: OneClickTransport,
    _served: testkit::Served,
    _front: tokio::task::JoinHandle<()>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        self._front.abort();
    }
}

async fn setup() -> Setup {
    let sender = Sender::default();
    let state = sender.clone();
    let app = axum::Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        answer(state.clone(), method, uri, headers, body)
    });
    let served = testkit::serve(app).await;
    let localhost: IpAddr = "127.0.0.1".parse().expect("loopback");
    let (front, ca, front_task) = testkit::tls::front(localhost, HOSTS, served.address).await;
    let dns = DnsServer::start().await;
    dns.set_addresses("letters.example", &[localhost]);
    let settings = Settings {
        resolver: Resolver::with_server(dns.address),
        port: front.port(),
        also_allowed: vec![localhost],
        roots: Some(vec![
            reqwest::Certificate::from_pem(ca.as_bytes()).expect("the authority"),
        ]),
        timeout: Duration::from_secs(1),
        connect_timeout: Duration::from_secs(1),
    };
    let public_only = OneClickTransport::new(Settings {
        also_allowed: Vec::new(),
        ..settings.clone()
    });
    Setup {
        dns,
        sender,
        transport: OneClickTransport::new(settings),
        public_only,
        _served: served,
        _front: front_task,
    }
}

impl Setup {
    fn received(&self) -> Vec<Received> {
        self.sender.received.lock().expect("lock").clone()
    }
}

#[tokio::test]
async fn a_one_click_request_is_one_bare_post_and_leaves_one_audit_line_without_the_path() {
    let logs = testkit::logs::Captured::default();
    let _guard = logs.install();
    let setup = setup().await;
    let sent = setup
        .transport
        .send("https://letters.example/u/ok?token=secret-token")
        .await;
    assert_eq!(sent.outcome, Outcome::Succeeded);
    assert_eq!(
        (sent.audit.host.as_str(), sent.audit.decision),
        ("letters.example", Decision::Allowed)
    );

    let received = setup.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let request = &received[0];
    assert_eq!(request.method, Method::POST);
    assert_eq!(request.uri, "/u/ok?token=secret-token");
    assert_eq!(&request.body[..], b"List-Unsubscribe=One-Click");
    assert_eq!(
        request
            .headers
            .get("content-type")
            .and_then(|value| value.to_str().ok()),
        Some("application/x-www-form-urlencoded")
    );
    for absent in ["cookie", "authorization", "referer", "proxy-authorization"] {
        assert!(
            request.headers.get(absent).is_none(),
            "no {absent}: {:?}",
            request.headers
        );
    }

    let text = logs.text();
    let audit: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("unsubscribe request"))
        .collect();
    assert_eq!(audit.len(), 1, "one audit line:\n{text}");
    assert!(
        audit[0].contains("host=letters.example") && audit[0].contains("decision=allowed"),
        "{text}"
    );
    assert!(audit[0].contains(&format!("port={}", sent.audit.port)), "{text}");
    assert!(
        !text.contains("/u/ok") && !text.contains("secret-token"),
        "no path or query is logged:\n{text}"
    );
}

#[tokio::test]
async fn a_name_with_any_address_outside_the_public_internet_is_refused_before_connecting() {
    let setup = setup().await;
    let refused = [
        "0.0.0.1",
        "10.1.2.3",
        "100.64.1.1",
        "127.0.0.1",
        "169.254.169.254",
        "172.20.0.1",
        "192.0.0.1",
        "192.0.2.10",
        "192.168.0.10",
        "198.18.5.5",
        "198.51.100.10",
        "203.0.113.10",
        "224.0.0.251",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:93.184.215.14",
        "64:ff9b::7f00:1",
        "64:ff9b:1::a00:1",
        "2001:db8::10",
        "2002:7f00:1::1",
        "fc00::10",
        "fe80::10",
        "ff02::fb",
    ];
    for (index, address) in refused.iter().enumerate() {
        let host = format!("r{index}.letters.example");
        let ip: IpAddr = address.parse().expect("an address");
        setup.dns.set_addresses(&host, &[ip]);
        let sent = setup.public_only.send(&format!("https://{host}/u/ok")).await;
        assert_eq!(
            (sent.outcome, sent.audit.decision),
            (Outcome::Failed(oneclick::DESTINATION_REFUSED), Decision::Refused),
            "{address}"
        );
    }
    // One private address among public ones refuses the name whole.
    let mixed: Vec<IpAddr> = ["93.184.215.14", "10.0.0.7"]
        .iter()
        .map(|address| address.parse().expect("an address"))
        .collect();
    setup.dns.set_addresses("mixed.letters.example", &mixed);
    let sent = setup.public_only.send("https://mixed.letters.example/u/ok").await;
    assert_eq!(sent.outcome, Outcome::Failed(oneclick::DESTINATION_REFUSED));
    // A name that does not resolve.
    let sent = setup.public_only.send("https://nowhere.letters.example/u/ok").await;
    assert_eq!(
        (sent.outcome, sent.audit.decision),
        (Outcome::Failed(oneclick::UNRESOLVED), Decision::Refused)
    );
    assert!(setup.received().is_empty(), "nothing reached any server");
}

#[tokio::test]
async fn the_connection_goes_to_the_vetted_address_whatever_the_name_resolves_to_later() {
    let setup = setup().await;
    let loopback: IpAddr = "127.0.0.1".parse().expect("loopback");
    let private: IpAddr = "10.9.9.9".parse().expect("private");
    // Vetted first, private at every later lookup: the request still reaches the vetted address.
    setup
        .dns
        .set_address_sequence("rebind.letters.example", &[&[loopback], &[private]]);
    let sent = setup.transport.send("https://rebind.letters.example/u/ok").await;
    assert_eq!(sent.outcome, Outcome::Succeeded);
    assert_eq!(setup.received().len(), 1);
    let lookups = setup.dns.lookups("rebind.letters.example");
    assert!(lookups <= 2, "one resolution (A and AAAA), not {lookups} lookups");

    // Private first: refused, though a later lookup would have looked acceptable.
    setup
        .dns
        .set_address_sequence("late.letters.example", &[&[private], &[loopback]]);
    let sent = setup.transport.send("https://late.letters.example/u/ok").await;
    assert_eq!(sent.outcome, Outcome::Failed(oneclick::DESTINATION_REFUSED));
    assert_eq!(setup.received().len(), 1, "nothing more was sent");
}

#[tokio::test]
async fn only_https_to_the_default_port_by_a_dotted_name_is_sent() {
    let setup = setup().await;
    for target in [
        "https://letters.example:8443/u/ok",
        "http://letters.example/u/ok",
        "https://127.0.0.1/u/ok",
        "https://user:password@letters.example/u/ok",
        "https://letters/u/ok",
        "mailto:leave@letters.example",
    ] {
        let sent = setup.transport.send(target).await;
        assert_eq!(
            (sent.outcome, sent.audit.decision),
            (Outcome::Failed(oneclick::DESTINATION_REFUSED), Decision::Refused),
            "{target}"
        );
    }
    assert!(setup.received().is_empty());
}

#[tokio::test]
async fn a_redirect_is_refused_and_never_followed() {
    let setup = setup().await;
    let sent = setup.transport.send("https://letters.example/u/redirect").await;
    assert_eq!(sent.outcome, Outcome::Failed(oneclick::REDIRECT_REFUSED));
    let received = setup.received();
    assert_eq!(received.len(), 1, "the redirect was not followed: {received:?}");
    assert_eq!(received[0].uri, "/u/redirect");
}

#[tokio::test]
async fn a_slow_answer_is_uncertain_and_an_oversized_one_is_not_read_whole() {
    let setup = setup().await;
    let started = Instant::now();
    let sent = setup.transport.send("https://letters.example/u/slow").await;
    assert_eq!(sent.outcome, Outcome::Uncertain(oneclick::NO_ANSWER));
    assert!(started.elapsed() < Duration::from_secs(3), "bounded by the timeout");

    let sent = setup.transport.send("https://letters.example/u/huge").await;
    assert_eq!(sent.outcome, Outcome::Succeeded);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let produced = setup.sender.produced.load(Ordering::SeqCst);
    assert!(
        produced < 50 * 1024 * 1024,
        "the answer was left unread after its first part ({produced} of 100 MiB produced)"
    );

    let sent = setup.transport.send("https://letters.example/u/missing").await;
    assert_eq!(sent.outcome, Outcome::Failed(oneclick::REJECTED));
}

#[tokio::test]
async fn no_connection_or_an_untrusted_certificate_sends_nothing() {
    let setup = setup().await;
    // A name the certificate does not cover: no TLS session, nothing sent.
    setup
        .dns
        .set_addresses("other.example", &["127.0.0.1".parse().expect("loopback")]);
    let sent = setup.transport.send("https://other.example/u/ok").await;
    assert_eq!(sent.outcome, Outcome::Failed(oneclick::UNREACHABLE));
    assert!(setup.received().is_empty());
}
