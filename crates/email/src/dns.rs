//! The DNS resolver of unsubscribe assistance: DKIM keys (the async worker's census) and
//! one-click hosts (the worker's transport) are looked up through the server
//! `EMAIL_DNS_SERVER` names (`IP:port`, UDP then TCP), or the host's `/etc/resolv.conf`.

use std::net::SocketAddr;
use std::time::Duration;

use mail_auth::hickory_resolver::TokioResolver;
use mail_auth::hickory_resolver::config::{LookupIpStrategy, NameServerConfig, ResolverConfig, ResolverOpts};
use mail_auth::hickory_resolver::net::runtime::TokioRuntimeProvider;
use mail_auth::hickory_resolver::system_conf::read_system_conf;

/// The variable naming the DNS server (`IP:port`); unset, the host's configuration.
pub const DNS_SERVER_VARIABLE: &str = "EMAIL_DNS_SERVER";

#[derive(Debug, thiserror::Error)]
pub enum DnsSetupError {
    #[error("{DNS_SERVER_VARIABLE} is not an IP address and port: {0:?}")]
    BadServer(String),
    #[error("cannot read the host's DNS configuration: {0}")]
    System(String),
}

/// A resolver: cheap to clone (the clones share their cache).
#[derive(Clone)]
pub struct Resolver(pub(crate) TokioResolver);

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

fn options(mut options: ResolverOpts) -> ResolverOpts {
    options.timeout = Duration::from_secs(5);
    options.attempts = 2;
    // Both families, every address: the one-click transport vets them all.
    options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    options
}

fn build(config: ResolverConfig, opts: ResolverOpts) -> Result<Resolver, DnsSetupError> {
    TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        .with_options(options(opts))
        .build()
        .map(Resolver)
        .map_err(|error| DnsSetupError::System(error.to_string()))
}

impl Resolver {
    /// Lookups through the DNS server at `server`.
    pub fn with_server(server: SocketAddr) -> Resolver {
        let mut name_server = NameServerConfig::udp_and_tcp(server.ip());
        for connection in &mut name_server.connections {
            connection.port = server.port();
        }
        build(
            ResolverConfig::from_name_servers(vec![name_server]),
            ResolverOpts::default(),
        )
        .expect("a resolver over one fixed server builds")
    }

    /// The resolver the environment (`lookup`) asks for.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Resolver, DnsSetupError> {
        match lookup(DNS_SERVER_VARIABLE).filter(|server| !server.trim().is_empty()) {
            Some(server) => server
                .trim()
                .parse()
                .map(Resolver::with_server)
                .map_err(|_| DnsSetupError::BadServer(server)),
            None => {
                let (config, opts) = read_system_conf().map_err(|error| DnsSetupError::System(error.to_string()))?;
                build(config, opts)
            }
        }
    }

    /// Every address `host` resolves to; empty when it has none.
    pub async fn addresses(&self, host: &str) -> Result<Vec<std::net::IpAddr>, String> {
        match self.0.lookup_ip(host).await {
            Ok(found) => Ok(found.iter().collect()),
            Err(error) if error.is_no_records_found() || error.is_nx_domain() => Ok(Vec::new()),
            Err(error) => Err(error.to_string()),
        }
    }
}
