use std::net::IpAddr;
use std::sync::Arc;

use browser_policy::egress::{ACCOUNT_LIST_HOST, AllowList, Origin};
use steward_browser::proxy::{Decision, Egress, EgressProxy, Resolve, Resolving, Settings, Upstream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const SHOP: &str = "shop.example";
/// Also on the profile; its DNS points it at loopback.
const ADMIN: &str = "admin.shop.example";

fn allow_shop() -> AllowList {
    AllowList::new([SHOP, ADMIN].map(|host| Origin::parse(&format!("https://{host}")).expect("an origin")))
}

async fn proxy(upstream: Upstream) -> (EgressProxy, UnboundedReceiver<Egress>) {
    let (journal, decisions) = unbounded_channel();
    let proxy = EgressProxy::start(Settings {
        allow: allow_shop(),
        upstream,
        journal: Some(journal),
    })
    .await
    .expect("start the proxy");
    (proxy, decisions)
}

fn drain(decisions: &mut UnboundedReceiver<Egress>) -> Vec<(String, u16, Decision)> {
    let mut seen = Vec::new();
    while let Ok(egress) = decisions.try_recv() {
        seen.push((egress.host, egress.port, egress.decision));
    }
    seen
}

/// Sends `request` to the proxy and returns its status line.
async fn ask(proxy: &EgressProxy, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(proxy.address()).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let mut chunk = [0u8; 256];
    while !answer.windows(2).any(|window| window == b"\r\n") {
        let read = stream.read(&mut chunk).await.expect("read");
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A client that goes through `proxy` as Chromium does, trusting the test sites' CA.
fn through(proxy: &EgressProxy, ca_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(format!("http://{}", proxy.address())).expect("a proxy"))
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("the CA"))
        .build()
        .expect("a client")
}

fn connect_request(authority: &str) -> String {
    format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n")
}

#[tokio::test]
async fn a_profile_origin_is_tunnelled_and_nothing_else_leaves() {
    let site = testkit::serve(axum::Router::new().route("/", axum::routing::get(|| async { "the shop" }))).await;
    let localhost: IpAddr = [127, 0, 0, 1].into();
    let (front, ca_pem, _front) = testkit::tls::front(localhost, &[SHOP], site.address).await;
    let (proxy, mut decisions) = proxy(Upstream::Local(front)).await;
    let client = through(&proxy, &ca_pem);

    let page = client
        .get(format!("https://{SHOP}/"))
        .send()
        .await
        .expect("through the proxy");
    assert_eq!(page.text().await.expect("the page"), "the shop");
    assert!(
        client.get("https://elsewhere.example/").send().await.is_err(),
        "another host is refused"
    );
    assert!(
        client.get(format!("https://{SHOP}:8443/")).send().await.is_err(),
        "another port is refused"
    );
    let plain = client
        .get(format!("http://{SHOP}/cart?token=secret"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(plain.status(), 403, "plain HTTP never leaves");
    assert_eq!(
        drain(&mut decisions),
        [
            (SHOP.to_owned(), 443, Decision::Tunnelled),
            ("elsewhere.example".to_owned(), 443, Decision::NotAllowed),
            (SHOP.to_owned(), 8443, Decision::NotAllowed),
            (SHOP.to_owned(), 80, Decision::NotTunnel),
        ]
    );
}

/// Answers every name with fixed addresses, as a DNS server pointing names anywhere would.
struct Pointing(Vec<(&'static str, Vec<IpAddr>)>);

impl Resolve for Pointing {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        let found = self
            .0
            .iter()
            .find(|(name, _)| *name == host)
            .map(|(_, addresses)| addresses.clone())
            .unwrap_or_default();
        Box::pin(async move { Ok(found) })
    }
}

#[tokio::test]
async fn loopback_private_and_off_profile_destinations_are_refused() {
    let loopback: IpAddr = [127, 0, 0, 1].into();
    let private: IpAddr = [10, 0, 0, 7].into();
    let public: IpAddr = [93, 184, 216, 34].into();
    let resolver = Pointing(vec![(SHOP, vec![public, private]), (ADMIN, vec![loopback])]);
    let (proxy, mut decisions) = proxy(Upstream::Public(Arc::new(resolver))).await;
    for authority in [
        format!("{SHOP}:443"),
        format!("{ADMIN}:443"),
        "127.0.0.1:443".to_owned(),
        "localhost:443".to_owned(),
        "[::1]:443".to_owned(),
        "10.0.0.7:443".to_owned(),
        "elsewhere.example:443".to_owned(),
    ] {
        assert_eq!(
            ask(&proxy, &connect_request(&authority)).await,
            "HTTP/1.1 403 Forbidden",
            "{authority}"
        );
    }
    // The account-list host is admitted; it resolves to nothing here, so it is not reached.
    assert_eq!(
        ask(&proxy, &connect_request(&format!("{ACCOUNT_LIST_HOST}:443"))).await,
        "HTTP/1.1 502 Bad Gateway"
    );
    assert_eq!(ask(&proxy, "NONSENSE\r\n\r\n").await, "HTTP/1.1 400 Bad Request");
    assert_eq!(
        drain(&mut decisions),
        [
            (SHOP.to_owned(), 443, Decision::NotPublic),
            (ADMIN.to_owned(), 443, Decision::NotPublic),
            ("127.0.0.1".to_owned(), 443, Decision::NotAllowed),
            ("localhost".to_owned(), 443, Decision::NotAllowed),
            ("[::1]".to_owned(), 443, Decision::NotAllowed),
            ("10.0.0.7".to_owned(), 443, Decision::NotAllowed),
            ("elsewhere.example".to_owned(), 443, Decision::NotAllowed),
            (ACCOUNT_LIST_HOST.to_owned(), 443, Decision::Unresolved),
            (String::new(), 0, Decision::Malformed),
        ]
    );
}

/// The egress relay on a Unix socket in `dir`, recording its decisions.
async fn relay(
    dir: &std::path::Path,
    upstream: Upstream,
) -> (
    std::path::PathBuf,
    UnboundedReceiver<Egress>,
    tokio::task::JoinHandle<()>,
) {
    let path = dir.join("relay.sock");
    let listener = tokio::net::UnixListener::bind(&path).expect("listen on the relay's socket");
    let (journal, decisions) = unbounded_channel();
    let task = tokio::spawn(async move {
        let _ = steward_browser::relay::serve(listener, upstream, Some(journal)).await;
    });
    (path, decisions, task)
}

/// Sends `request` to the relay and returns its answer's head.
async fn ask_relay(path: &std::path::Path, request: &str) -> String {
    let mut stream = tokio::net::UnixStream::connect(path)
        .await
        .expect("connect to the relay");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let mut chunk = [0u8; 256];
    while !answer.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await.expect("read");
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn through_the_relay_a_profile_origin_is_reached_and_without_it_nothing() {
    let dir = tempfile::tempdir().expect("a directory");
    let site = testkit::serve(axum::Router::new().route("/", axum::routing::get(|| async { "the shop" }))).await;
    let localhost: IpAddr = [127, 0, 0, 1].into();
    let (front, ca_pem, _front) = testkit::tls::front(localhost, &[SHOP], site.address).await;
    let (path, mut relayed, relay_task) = relay(dir.path(), Upstream::Local(front)).await;
    let (proxy, mut decisions) = proxy(Upstream::Relay(path.clone())).await;
    let client = through(&proxy, &ca_pem);
    let page = client
        .get(format!("https://{SHOP}/"))
        .send()
        .await
        .expect("through the proxy and the relay");
    assert_eq!(page.text().await.expect("the page"), "the shop");
    assert!(client.get("https://elsewhere.example/").send().await.is_err());
    assert_eq!(
        drain(&mut decisions),
        [
            (SHOP.to_owned(), 443, Decision::Tunnelled),
            ("elsewhere.example".to_owned(), 443, Decision::NotAllowed),
        ]
    );
    assert_eq!(
        drain(&mut relayed),
        [(SHOP.to_owned(), 443, Decision::Tunnelled)],
        "the relay is asked only for what the proxy admitted"
    );

    relay_task.abort();
    let _ = relay_task.await;
    std::fs::remove_file(&path).expect("remove the socket");
    assert_eq!(
        ask(&proxy, &connect_request(&format!("{SHOP}:443"))).await,
        "HTTP/1.1 502 Bad Gateway",
        "without the relay nothing leaves"
    );
    assert_eq!(drain(&mut decisions), [(SHOP.to_owned(), 443, Decision::Unreachable)]);
}

#[tokio::test]
async fn the_relay_connects_only_names_on_web_ports_whose_every_address_is_public() {
    let dir = tempfile::tempdir().expect("a directory");
    let address = |text: &str| -> IpAddr { text.parse().expect("an address") };
    let resolver = Pointing(vec![
        (SHOP, vec![address("93.184.216.34"), address("10.0.0.7")]),
        (ADMIN, vec![address("127.0.0.1")]),
        ("mapped.example", vec![address("::ffff:127.0.0.1")]),
        ("nat64.example", vec![address("64:ff9b::7f00:1")]),
        ("sixtofour.example", vec![address("2002:7f00:1::1")]),
        ("metadata.example", vec![address("169.254.169.254")]),
    ]);
    let (path, mut relayed, _relay_task) = relay(dir.path(), Upstream::Public(Arc::new(resolver))).await;
    let mut expected = Vec::new();
    for host in [
        SHOP,
        ADMIN,
        "mapped.example",
        "nat64.example",
        "sixtofour.example",
        "metadata.example",
    ] {
        let answer = ask_relay(&path, &connect_request(&format!("{host}:443"))).await;
        assert!(
            answer.starts_with("HTTP/1.1 403 Forbidden\r\n") && answer.contains("Egress-Decision: not_public\r\n"),
            "{host}: {answer}"
        );
        expected.push((host.to_owned(), 443, Decision::NotPublic));
    }
    for authority in [
        "93.184.216.34:443",
        "[2606:2800:220:1::]:443",
        "shop.example:25",
        "shop.example:22",
        "shop.example:80",
        "localhost:443",
    ] {
        let answer = ask_relay(&path, &connect_request(authority)).await;
        assert!(
            answer.contains("Egress-Decision: not_allowed\r\n"),
            "{authority}: {answer}"
        );
        let (host, port) = authority.rsplit_once(':').expect("host:port");
        expected.push((host.to_owned(), port.parse().expect("a port"), Decision::NotAllowed));
    }
    let plain = ask_relay(&path, "GET http://shop.example/ HTTP/1.1\r\n\r\n").await;
    assert!(plain.contains("Egress-Decision: not_tunnel\r\n"), "{plain}");
    expected.push((SHOP.to_owned(), 80, Decision::NotTunnel));
    assert_eq!(drain(&mut relayed), expected);

    // The proxy in front of it carries the relay's reason into its own record.
    let (proxy, mut decisions) = proxy(Upstream::Relay(path.clone())).await;
    assert_eq!(
        ask(&proxy, &connect_request(&format!("{ADMIN}:443"))).await,
        "HTTP/1.1 403 Forbidden"
    );
    assert_eq!(drain(&mut decisions), [(ADMIN.to_owned(), 443, Decision::NotPublic)]);
}
