//! The egress relay: the browser role's one way out of its private network. It serves the
//! same `CONNECT host:port` the role's proxy understands, on a Unix socket only the browser
//! role can open, and it opens a connection only where a website could be
//! ([`browser_policy::egress::relays`]: a public host name on 443 or an unprivileged port),
//! resolving the name itself and connecting only when every address is public. It knows no
//! profile: which origins a browser may reach is the role's proxy's decision, made before it
//! asks. A compromised browser role (or a browser process of it that escaped Chromium's sandbox:
//! it runs as the role's user, who may open the relay's socket) can therefore reach public
//! websites on web ports, but nothing of the host's own networks: neither loopback (the
//! database, the other roles), nor the private ranges, nor the host's own addresses, public
//! ones included ([`WithoutHost`]), nor a mail or SSH port anywhere.
//!
//! Each request leaves one audit line (target `steward::audit`, `browser egress relay`) with
//! the host, the port and the decision.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc::UnboundedSender;

use crate::proxy::{
    Answering, Decision, Egress, MAX_CONNECTIONS, Resolve, Resolving, Upstream, finish, read_connect, serve_each,
    tunnel,
};
use crate::tasks::MAX_BROWSERS;

/// A resolver whose answers never name this host: any address of one of its own interfaces
/// (read at each lookup) is answered as `0.0.0.0`, which is not public, so the relay refuses
/// the tunnel (`not_public`) rather than reach a service of this host by its public address.
pub struct WithoutHost<R>(pub R);

impl<R: Resolve> Resolve for WithoutHost<R> {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        Box::pin(async move {
            let resolved = self.0.resolve(host).await?;
            let own = host_addresses();
            Ok(resolved
                .into_iter()
                .map(|address| {
                    if own.contains(&address) {
                        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
                    } else {
                        address
                    }
                })
                .collect())
        })
    }
}

/// The addresses of this host's interfaces.
pub fn host_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    interfaces
        .filter_map(|interface| interface.address)
        .filter_map(|address| {
            address
                .as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| address.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
        })
        .collect()
}

/// The name servers of a `resolv.conf` that the relay's unit denies (any that is not public,
/// except systemd-resolved's stub at `127.0.0.53`): with one of them, names do not resolve
/// until a drop-in allows it.
pub fn denied_name_servers(resolv_conf: &str) -> Vec<IpAddr> {
    resolv_conf
        .lines()
        .filter_map(|line| line.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().split('%').next()?.parse::<IpAddr>().ok())
        .filter(|address| {
            !browser_policy::egress::is_public(*address) && *address != IpAddr::V4(Ipv4Addr::new(127, 0, 0, 53))
        })
        .collect()
}

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
    // Every browser's tunnels come through here.
    serve_each(
        "the egress relay",
        MAX_CONNECTIONS * MAX_BROWSERS,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_servers_the_unit_denies_are_found() {
        let conf = "# generated\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nnameserver 1.1.1.1\nnameserver fe80::1%eth0\nsearch lan\n";
        assert_eq!(
            denied_name_servers(conf),
            [
                "10.0.0.2".parse::<IpAddr>().expect("an address"),
                "fe80::1".parse().expect("an address")
            ]
        );
        assert!(denied_name_servers("nameserver 127.0.0.53\n").is_empty());
    }

    /// Answers every name with the addresses given.
    struct Fixed(Vec<IpAddr>);

    impl Resolve for Fixed {
        fn resolve<'a>(&'a self, _host: &'a str) -> Resolving<'a> {
            let answer = self.0.clone();
            Box::pin(async move { Ok(answer) })
        }
    }

    #[tokio::test]
    async fn the_hosts_own_addresses_are_never_an_answer() {
        let own = host_addresses();
        assert!(!own.is_empty(), "this host has interfaces");
        let stranger: IpAddr = "93.184.216.34".parse().expect("an address");
        let mut given = own.clone();
        given.push(stranger);
        let answered = WithoutHost(Fixed(given))
            .resolve("shop.example")
            .await
            .expect("an answer");
        assert_eq!(answered.len(), own.len() + 1);
        assert_eq!(answered.last(), Some(&stranger), "a stranger's address is kept");
        assert!(
            answered[..own.len()]
                .iter()
                .all(|address| *address == IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            "{answered:?}"
        );
        assert!(browser_policy::egress::AllowList::connects(&answered).is_err());
    }
}
