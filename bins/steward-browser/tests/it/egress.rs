//! A real hosted browser (Debian's Chromium, headed under Xvfb, with the launch policy) behind
//! the egress proxy: every request it makes, on start and on page loads, is recorded by the
//! proxy's journal, and nothing but the page's own origin, the vendor's account-list host and
//! (on Linux, without the image's managed policy) the spellcheck dictionary is ever asked for.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use browser_policy::egress::{ACCOUNT_LIST_HOST, AllowList, Origin};
use steward_browser::chromium::{CHROMIUM, Hosted, Launch};
use steward_browser::display::VirtualDisplay;
use steward_browser::proxy::{Decision, Egress, EgressProxy, Settings, Upstream};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const SHOP: &str = "shop.example";
const ELSEWHERE: &str = "elsewhere.example";
/// Where Chromium fetches a spellcheck dictionary it does not have (Linux, no managed policy).
const DICTIONARY_HOSTS: [&str; 1] = ["redirector.gvt1.com"];
/// Chromium 15x asks the component updater, on demand and at start, for its on-device model
/// manifest (`ceofaddefefcbblgcgnibnonglccbfja`), even with `--disable-component-update`,
/// `--disable-background-networking` and the `ComponentUpdatesEnabled` policy off. The proxy
/// refuses it: it may be asked for, it must never leave.
const REFUSED_VENDOR_HOSTS: [&str; 1] = ["update.googleapis.com"];

fn drain(journal: &mut UnboundedReceiver<Egress>) -> Vec<(String, u16, Decision)> {
    let mut seen = Vec::new();
    while let Ok(egress) = journal.try_recv() {
        seen.push((egress.host, egress.port, egress.decision));
    }
    seen
}

/// The site: a page with a same-origin image, and a page that also asks for a third party's
/// image and one from a loopback address (counted when it arrives: it must not), and opens a
/// WebRTC connection whose STUN server is a UDP port on loopback (no datagram may reach it).
fn site(loopback_hits: Arc<AtomicUsize>, loopback: String, stun: u16) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async {
                Html("<!doctype html><title>The shop</title><h1>The shop</h1><img src=\"/pixel.svg\" alt=\"\">")
            }),
        )
        .route(
            "/pixel.svg",
            get(|| async {
                (
                    [("content-type", "image/svg+xml")],
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"/>",
                )
            }),
        )
        .route(
            "/third-party",
            get(move || async move {
                Html(format!(
                    "<!doctype html><title>Third party</title><img src=\"https://{ELSEWHERE}/x.svg\" alt=\"\"><img src=\"{loopback}/loopback.svg\" alt=\"\"><script>const peer = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{stun}'}}]}}); peer.createDataChannel('x'); peer.createOffer().then((offer) => peer.setLocalDescription(offer));</script>"
                ))
            }),
        )
        .route(
            "/loopback.svg",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                ""
            }),
        )
        .with_state(loopback_hits)
}

/// A hosted browser on its own Xvfb, behind a proxy for the shop's origin that sends every
/// tunnel to `front` (and its decisions to `journal`), accepting the local site key `key`.
async fn launched(
    front: std::net::SocketAddr,
    journal: Option<tokio::sync::mpsc::UnboundedSender<Egress>>,
    key: &str,
) -> (EgressProxy, VirtualDisplay, tempfile::TempDir, Hosted) {
    let proxy = EgressProxy::start(Settings {
        allow: AllowList::new([Origin::parse(&format!("https://{SHOP}")).expect("an origin")]),
        upstream: Upstream::Local(front),
        journal,
    })
    .await
    .expect("start the proxy");
    let display = tokio::task::spawn_blocking(|| VirtualDisplay::start(Path::new("/usr/bin/Xvfb")))
        .await
        .expect("join")
        .expect("Xvfb starts (Debian: apt-get install xvfb)");
    let dir = tempfile::tempdir().expect("a directory");
    let root = std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0;
    let hosted = Hosted::launch(&Launch {
        executable: CHROMIUM.into(),
        display: display.name().to_owned(),
        proxy: proxy.address(),
        data_directory: dir.path().join("profile"),
        sandbox: !root,
        local_site_keys: vec![key.to_owned()],
    })
    .await
    .expect("Chromium starts");
    (proxy, display, dir, hosted)
}

async fn load(hosted: &Hosted, url: &str) -> Option<String> {
    let page = hosted.browser().new_page(url).await.expect("open a page");
    page.wait_for_navigation().await.expect("the page loads");
    page.get_title().await.expect("the title")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_browser_asks_for_nothing_but_its_page_the_account_list_and_the_dictionary() {
    let loopback_hits = Arc::new(AtomicUsize::new(0));
    // The loopback page the third-party page points at is this same site, by address.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let address = listener.local_addr().expect("address");
    let stun = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
    stun.set_nonblocking(true).expect("non-blocking");
    let stun_port = stun.local_addr().expect("its address").port();
    let router = site(Arc::clone(&loopback_hits), format!("http://{address}"), stun_port);
    let _site = tokio::spawn(async move { axum::serve(listener, router).await });
    let localhost: IpAddr = [127, 0, 0, 1].into();
    let issued = testkit::tls::issue(&[SHOP], &[]);
    let (front, _front) = testkit::tls::serve_front(localhost, issued.acceptor, address).await;

    let (journal, mut requests) = unbounded_channel();
    let (_proxy, _display, _dir, hosted) = launched(front, Some(journal), &issued.spki_sha256).await;

    // On start: what the browser asks for of its own accord.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let on_start = drain(&mut requests);

    // A page load: the page and its image, from the page's origin.
    assert_eq!(
        load(&hosted, &format!("https://{SHOP}/")).await.as_deref(),
        Some("The shop")
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let on_load = drain(&mut requests);

    // A page that points elsewhere: a third party and a loopback address are refused.
    assert_eq!(
        load(&hosted, &format!("https://{SHOP}/third-party")).await.as_deref(),
        Some("Third party")
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let third_party = drain(&mut requests);
    hosted.close().await;

    // What leaves: the page's origin, the account list and the dictionary, nothing else.
    // What is asked for besides: only the vendor requests the proxy refuses.
    for (when, seen) in [
        ("on start", &on_start),
        ("on a page load", &on_load),
        ("on a third party's page", &third_party),
    ] {
        let left: BTreeSet<&str> = seen
            .iter()
            .filter(|(_, _, decision)| *decision == Decision::Tunnelled)
            .map(|(host, _, _)| host.as_str())
            .filter(|host| *host != SHOP && *host != ACCOUNT_LIST_HOST && !DICTIONARY_HOSTS.contains(host))
            .collect();
        assert!(left.is_empty(), "{when}, {left:?} left the host (all: {seen:?})");
        let asked: BTreeSet<&str> = seen
            .iter()
            .map(|(host, _, _)| host.as_str())
            .filter(|host| *host != ELSEWHERE && *host != "127.0.0.1")
            .filter(|host| {
                *host != SHOP
                    && *host != ACCOUNT_LIST_HOST
                    && !DICTIONARY_HOSTS.contains(host)
                    && !REFUSED_VENDOR_HOSTS.contains(host)
            })
            .collect();
        assert!(
            asked.is_empty(),
            "{when}, the browser asked for {asked:?} (all: {seen:?})"
        );
        assert!(
            seen.iter()
                .all(|(host, _, decision)| !REFUSED_VENDOR_HOSTS.contains(&host.as_str())
                    || *decision != Decision::Tunnelled),
            "{when}: {seen:?}"
        );
    }
    assert!(
        on_load.contains(&(SHOP.to_owned(), 443, Decision::Tunnelled)),
        "the page went through the proxy: {on_load:?}"
    );
    assert!(
        third_party.contains(&(ELSEWHERE.to_owned(), 443, Decision::NotAllowed)),
        "the third party was refused: {third_party:?}"
    );
    assert!(
        third_party.iter().any(|(host, port, decision)| host == "127.0.0.1"
            && *port == address.port()
            && *decision != Decision::Tunnelled),
        "the loopback address went to the proxy and was refused: {third_party:?}"
    );
    assert_eq!(
        loopback_hits.load(Ordering::SeqCst),
        0,
        "nothing reached loopback around the proxy"
    );
    let mut datagram = [0u8; 1500];
    assert!(
        matches!(stun.recv_from(&mut datagram), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "WebRTC sent UDP around the proxy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_the_browser_does_not_trust_is_refused() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let site = testkit::serve(Router::new().route(
        "/",
        get(move || async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Html("<!doctype html><title>The shop</title>")
        }),
    ))
    .await;
    let localhost: IpAddr = [127, 0, 0, 1].into();
    // The site's certificate is not the one whose key the browser was told to accept.
    let served = testkit::tls::issue(&[SHOP], &[]);
    let trusted = testkit::tls::issue(&[SHOP], &[]);
    let (front, _front) = testkit::tls::serve_front(localhost, served.acceptor, site.address).await;
    let (_proxy, _display, _dir, hosted) = launched(front, None, &trusted.spki_sha256).await;
    let page = hosted.browser().new_page("about:blank").await.expect("a page");
    let _ = page.goto(format!("https://{SHOP}/")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let title = page.get_title().await.ok().flatten();
    hosted.close().await;
    assert_ne!(title.as_deref(), Some("The shop"));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "no request reached the site");
}
