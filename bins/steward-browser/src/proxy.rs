//! The egress proxy: every connection a hosted browser makes goes through it (Chromium's
//! `--proxy-server`), and it opens only HTTPS tunnels (`CONNECT host:port`, RFC 9110 §9.3.6)
//! that the profile's [`AllowList`] admits, to names whose every address is public. Plain HTTP
//! (a proxied `GET http://…`), other hosts and ports, IP literals and names resolving inside the
//! host's networks are refused with `403`; a name that does not resolve, or a server that
//! cannot be reached, with `502`.
//!
//! Each request leaves one audit line (target `steward::audit`) with the host, the port and
//! the decision, and the same [`Egress`] record on the optional journal. A tunnel carries TLS
//! the proxy cannot read: no path, header or body of a page ever reaches it.
//!
//! Under systemd the role has a private network (`PrivateNetwork=yes`): its proxy reaches the
//! world only through the egress relay ([`Upstream::Relay`], [`crate::relay`]), a small
//! service outside that network which resolves the name itself and connects only to public
//! addresses.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use browser_policy::egress::AllowList;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// The longest request head read.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection to the server may take, and resolving its name.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections one proxy serves at once (one browser's); more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 256;

/// What became of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The tunnel was opened.
    Tunnelled,
    /// Not a `CONNECT`: plain HTTP never leaves.
    NotTunnel,
    /// Neither one of the profile's origins nor the account-list host.
    NotAllowed,
    /// The name resolved to an address that is not public.
    NotPublic,
    /// The name has no address, or resolving it failed.
    Unresolved,
    /// No connection to the server could be made.
    Unreachable,
    /// Not an HTTP request head.
    Malformed,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Tunnelled => "tunnelled",
            Decision::NotTunnel => "not_tunnel",
            Decision::NotAllowed => "not_allowed",
            Decision::NotPublic => "not_public",
            Decision::Unresolved => "unresolved",
            Decision::Unreachable => "unreachable",
            Decision::Malformed => "malformed",
        }
    }

    /// The decision [`Decision::as_str`] names.
    pub fn parse(text: &str) -> Option<Decision> {
        [
            Decision::Tunnelled,
            Decision::NotTunnel,
            Decision::NotAllowed,
            Decision::NotPublic,
            Decision::Unresolved,
            Decision::Unreachable,
            Decision::Malformed,
        ]
        .into_iter()
        .find(|decision| decision.as_str() == text)
    }

    fn status(self) -> &'static str {
        match self {
            Decision::Tunnelled => "200 Connection Established",
            Decision::NotTunnel | Decision::NotAllowed | Decision::NotPublic => "403 Forbidden",
            Decision::Unresolved | Decision::Unreachable => "502 Bad Gateway",
            Decision::Malformed => "400 Bad Request",
        }
    }
}

/// One request the proxy decided on: where it would have gone (never a path) and what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Egress {
    pub host: String,
    pub port: u16,
    pub decision: Decision,
}

/// A name's addresses.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// How names are resolved.
pub trait Resolve: Send + Sync {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a>;
}

/// The host's resolver.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        Box::pin(async move {
            // Fully qualified, so no search domain completes it into a local name.
            Ok(tokio::net::lookup_host((format!("{host}."), 0))
                .await?
                .map(|address| address.ip())
                .collect())
        })
    }
}

/// Where admitted tunnels go.
#[derive(Clone)]
pub enum Upstream {
    /// To the name's own addresses, every one of them public.
    Public(Arc<dyn Resolve>),
    /// To one local address, whatever the name (the offline demo's and the tests' sites, served
    /// on loopback with a certificate for their names). Admission is unchanged.
    Local(SocketAddr),
    /// Through the egress relay listening on this Unix socket, which resolves the name and
    /// connects to public addresses only (the role's own network is private under systemd).
    Relay(PathBuf),
}

/// A byte stream a tunnel runs over: a TCP connection, or the relay's Unix socket.
pub trait Tunnel: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Tunnel for T {}

/// The relay's answer header naming its [`Decision`] when it refuses.
pub const DECISION_HEADER: &str = "Egress-Decision";

/// What one proxy admits and where it sends it.
pub struct Settings {
    pub allow: AllowList,
    pub upstream: Upstream,
    /// Every decision, in order, for whoever watches (the tests).
    pub journal: Option<UnboundedSender<Egress>>,
}

/// A running proxy on 127.0.0.1; dropping it stops it and closes every connection and tunnel
/// it holds.
#[derive(Debug)]
pub struct EgressProxy {
    address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EgressProxy {
    /// Binds a free loopback port and serves `settings` on it.
    pub async fn start(settings: Settings) -> io::Result<EgressProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let settings = Arc::new(settings);
        let task = tokio::spawn(serve_each(
            "the egress proxy",
            MAX_CONNECTIONS,
            async move || listener.accept().await.map(|(stream, _)| stream),
            move |stream| handle(stream, Arc::clone(&settings)),
        ));
        Ok(EgressProxy { address, task })
    }

    /// Where the browser is pointed (`--proxy-server=http://…`).
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

/// Accepts connections with `accept` and serves each with `handle`, at most `cap` at once (more
/// wait to be accepted), for as long as it is polled. The connections are owned here: dropping
/// (aborting) it ends every one of them.
pub(crate) async fn serve_each<S, F>(
    what: &'static str,
    cap: usize,
    mut accept: impl AsyncFnMut() -> io::Result<S>,
    handle: impl Fn(S) -> F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        if connections.len() >= cap {
            let _ = connections.join_next().await;
            continue;
        }
        match accept().await {
            Ok(stream) => {
                connections.spawn(handle(stream));
            }
            Err(error) => {
                tracing::warn!(%error, "{what} could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The request head and whatever of the body came with it.
pub(crate) async fn read_head(stream: &mut (impl AsyncRead + Unpin)) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let read = async {
        loop {
            if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
                let rest = buffer.split_off(end + 4);
                return String::from_utf8(buffer).ok().map(|head| (head, rest));
            }
            if buffer.len() > MAX_HEAD_BYTES {
                return None;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        }
    };
    tokio::time::timeout(HEAD_TIMEOUT, read).await.ok().flatten()
}

/// `host` and `port` of an authority (`host:port`, `[v6]:port`), the host lower case.
pub(crate) fn authority(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Where a plain-HTTP request (`GET http://host[:port]/…`) was going: its host and port only
/// (no user name or password, no path).
fn plain_destination(target: &str) -> (String, u16) {
    let rest = target.strip_prefix("http://").unwrap_or(target);
    let authority_part = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority_part = authority_part.rsplit('@').next().unwrap_or_default();
    authority(authority_part).unwrap_or_else(|| (authority_part.to_ascii_lowercase(), 80))
}

/// Who answers a request, and how it is recorded.
pub(crate) struct Answering<'a> {
    /// The audit line's message.
    pub what: &'static str,
    pub journal: Option<&'a UnboundedSender<Egress>>,
}

/// A `CONNECT` request's destination, or the decision already made on the request.
pub(crate) async fn read_connect(
    stream: &mut (impl AsyncRead + AsyncWrite + Unpin),
    answering: &Answering<'_>,
) -> Option<(String, u16, Vec<u8>)> {
    let Some((head, early)) = read_head(stream).await else {
        finish(stream, answering, String::new(), 0, Decision::Malformed).await;
        return None;
    };
    let mut request = head.lines().next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (request.next(), request.next(), request.next(), request.next())
    else {
        finish(stream, answering, String::new(), 0, Decision::Malformed).await;
        return None;
    };
    if !version.starts_with("HTTP/1.") {
        finish(stream, answering, String::new(), 0, Decision::Malformed).await;
        return None;
    }
    if method != "CONNECT" {
        let (host, port) = plain_destination(target);
        finish(stream, answering, host, port, Decision::NotTunnel).await;
        return None;
    }
    let Some((host, port)) = authority(target) else {
        finish(stream, answering, String::new(), 0, Decision::Malformed).await;
        return None;
    };
    Some((host, port, early))
}

/// Connects `host:port` through `upstream`, answers the client, and carries the tunnel until
/// either side closes it.
pub(crate) async fn tunnel(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    answering: &Answering<'_>,
    upstream: &Upstream,
    host: String,
    port: u16,
    early: Vec<u8>,
) {
    let mut server = match connect(upstream, &host, port).await {
        Ok(server) => server,
        Err(decision) => {
            finish(&mut stream, answering, host, port, decision).await;
            return;
        }
    };
    finish(&mut stream, answering, host, port, Decision::Tunnelled).await;
    if !early.is_empty() && server.write_all(&early).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut stream, &mut server).await;
}

async fn handle(mut stream: TcpStream, settings: Arc<Settings>) {
    let answering = Answering {
        what: "browser egress",
        journal: settings.journal.as_ref(),
    };
    let Some((host, port, early)) = read_connect(&mut stream, &answering).await else {
        return;
    };
    if settings.allow.admits(&host, port).is_err() {
        finish(&mut stream, &answering, host, port, Decision::NotAllowed).await;
        return;
    }
    tunnel(stream, &answering, &settings.upstream, host, port, early).await;
}

/// A connection to the admitted `host:port` through `upstream`.
async fn connect(upstream: &Upstream, host: &str, port: u16) -> Result<Box<dyn Tunnel>, Decision> {
    let addresses: Vec<SocketAddr> = match upstream {
        Upstream::Relay(path) => return through_relay(path, host, port).await,
        Upstream::Local(address) => vec![*address],
        Upstream::Public(resolver) => {
            let resolved = match tokio::time::timeout(CONNECT_TIMEOUT, resolver.resolve(host)).await {
                Ok(Ok(resolved)) => resolved,
                _ => Vec::new(),
            };
            if resolved.is_empty() {
                return Err(Decision::Unresolved);
            }
            if AllowList::connects(&resolved).is_err() {
                return Err(Decision::NotPublic);
            }
            resolved.into_iter().map(|ip| SocketAddr::new(ip, port)).collect()
        }
    };
    // Each address in turn, and all of them within twice one's time.
    let each = async {
        for address in addresses {
            if let Ok(Ok(server)) = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
                return Some(server);
            }
        }
        None
    };
    match tokio::time::timeout(CONNECT_TIMEOUT * 2, each).await {
        Ok(Some(server)) => Ok(Box::new(server)),
        _ => Err(Decision::Unreachable),
    }
}

/// Asks the relay at `path` for a tunnel to `host:port` (the same `CONNECT` a browser sends);
/// its refusal keeps the relay's decision.
async fn through_relay(path: &std::path::Path, host: &str, port: u16) -> Result<Box<dyn Tunnel>, Decision> {
    let ask = async {
        let mut relay = UnixStream::connect(path).await.ok()?;
        // Only admitted names reach here: never an address literal.
        let authority = format!("{host}:{port}");
        relay
            .write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
            .await
            .ok()?;
        // Read the answer's head byte by byte: nothing of the tunnel may be consumed with it.
        let mut head = Vec::with_capacity(128);
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() > MAX_HEAD_BYTES || relay.read(&mut byte).await.ok()? == 0 {
                return None;
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).ok()?;
        Some((relay, head))
    };
    // The relay itself resolves and connects within its own timeouts; this bounds the whole.
    let Ok(Some((relay, head))) = tokio::time::timeout(CONNECT_TIMEOUT * 3 + Duration::from_secs(2), ask).await else {
        return Err(Decision::Unreachable);
    };
    if head.starts_with("HTTP/1.1 200 ") {
        return Ok(Box::new(relay));
    }
    let prefix = format!("{}: ", DECISION_HEADER.to_ascii_lowercase());
    Err(head
        .lines()
        .find_map(|line| {
            let lower = line.to_ascii_lowercase();
            lower
                .strip_prefix(&prefix)
                .and_then(|value| Decision::parse(value.trim()))
        })
        .filter(|decision| *decision != Decision::Tunnelled)
        .unwrap_or(Decision::Unreachable))
}

/// Records the decision and answers the client with its status (and, on a refusal, the
/// decision under [`DECISION_HEADER`]).
pub(crate) async fn finish(
    stream: &mut (impl AsyncWrite + Unpin),
    answering: &Answering<'_>,
    host: String,
    port: u16,
    decision: Decision,
) {
    tracing::info!(target: "steward::audit", host = %host, port, decision = decision.as_str(), "{}", answering.what);
    if let Some(journal) = answering.journal {
        let _ = journal.send(Egress { host, port, decision });
    }
    let answer = if decision == Decision::Tunnelled {
        format!("HTTP/1.1 {}\r\n\r\n", decision.status())
    } else {
        format!(
            "HTTP/1.1 {}\r\n{DECISION_HEADER}: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            decision.status(),
            decision.as_str()
        )
    };
    let _ = stream.write_all(answer.as_bytes()).await;
    if decision != Decision::Tunnelled {
        let _ = stream.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_and_plain_destinations_keep_only_host_and_port() {
        assert_eq!(authority("Shop.Example:443"), Some(("shop.example".into(), 443)));
        assert_eq!(authority("[::1]:443"), Some(("[::1]".into(), 443)));
        assert_eq!(authority("shop.example"), None);
        assert_eq!(authority(":443"), None);
        assert_eq!(
            plain_destination("http://shop.example/cart?id=7"),
            ("shop.example".into(), 80)
        );
        assert_eq!(
            plain_destination("http://shop.example:8080/"),
            ("shop.example".into(), 8080)
        );
        assert_eq!(
            plain_destination("http://me:pw@shop.example/"),
            ("shop.example".into(), 80)
        );
    }
}
