//! The egress relay: the browser role's one way out of its private network. It serves the
//! same `CONNECT host:port` the role's proxy understands, on a Unix socket only the browser
//! role can open, and it opens a connection only where a website could be
//! ([`browser_policy::egress::relays`]: a public host name on 443 or an unprivileged port),
//! resolving the name itself and connecting only when every address is public. It knows no
//! profile: which origins a browser may reach is the role's proxy's decision, made before it
//! asks. A compromised browser role can therefore reach nothing of the host's own networks,
//! neither loopback (the database, the other roles) nor the private ranges, nor a mail or SSH
//! port anywhere.
//!
//! Each request leaves one audit line (target `steward::audit`, `browser egress relay`) with
//! the host, the port and the decision.

use std::io;
use std::sync::Arc;

use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc::UnboundedSender;

use crate::proxy::{Answering, Decision, Egress, Upstream, finish, read_connect, serve_each, tunnel};

/// Serves the relay on `listener` until the future is dropped: each admitted request is
/// connected through `upstream` (`Upstream::Public` in production; a test's or the demo's
/// `Upstream::Local`).
pub async fn serve(
    listener: UnixListener,
    upstream: Upstream,
    journal: Option<UnboundedSender<Egress>>,
) -> io::Result<()> {
    if matches!(upstream, Upstream::Relay(_)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the relay connects directly, never through another relay",
        ));
    }
    let shared = Arc::new((upstream, journal));
    serve_each(
        "the egress relay",
        async move || listener.accept().await.map(|(stream, _)| stream),
        move |stream| handle(stream, Arc::clone(&shared)),
    )
    .await;
    Ok(())
}

async fn handle(mut stream: UnixStream, shared: Arc<(Upstream, Option<UnboundedSender<Egress>>)>) {
    let (upstream, journal) = &*shared;
    let answering = Answering {
        what: "browser egress relay",
        journal: journal.as_ref(),
    };
    let Some((host, port, early)) = read_connect(&mut stream, &answering).await else {
        return;
    };
    if browser_policy::egress::relays(&host, port).is_err() {
        finish(&mut stream, &answering, host, port, Decision::NotAllowed).await;
        return;
    }
    tunnel(stream, &answering, upstream, host, port, early).await;
}
