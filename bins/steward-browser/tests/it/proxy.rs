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

fn connect_request(authority: &str) -> String {
    format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n")
}

#[tokio::test]
async fn a_profile_origin_is_tunnelled_and_nothing_else_leaves() {
    let site = testkit::serve(axum::Router::new().route("/", axum::routing::get(|| async { "the shop" }))).await;
    let localhost: IpAddr = [127, 0, 0, 1].into();
    let (front, ca_pem, _front) = testkit::tls::front(localhost, &[SHOP], site.address).await;
    let (proxy, mut decisions) = proxy(Upstream::Local(front)).await;
    let client = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(format!("http://{}", proxy.address())).expect("a proxy"))
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("the CA"))
        .build()
        .expect("a client");

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
