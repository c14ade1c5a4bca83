//! TLS for a test's HTTPS stand-in (with the `tls` feature): a certificate authority made at run
//! time and a certificate it issued for `localhost`, so a client that trusts only that authority
//! can verify the server.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, PKCS_ECDSA_P256_SHA256};

/// An acceptor serving a fresh certificate for `localhost` (offering `alpn`, in order), and the
/// certificate (PEM) of the authority that issued it.
pub fn localhost(alpn: &[&[u8]]) -> (tokio_rustls::TlsAcceptor, String) {
    for_names(&["localhost"], alpn)
}

/// A certificate authority made at run time, and a certificate it issued.
pub struct Issued {
    /// Serves the issued certificate.
    pub acceptor: tokio_rustls::TlsAcceptor,
    /// The authority's certificate (PEM).
    pub ca_pem: String,
    /// The issued certificate's public key: Base64 of the SHA-256 of its SubjectPublicKeyInfo,
    /// the form Chromium's `--ignore-certificate-errors-spki-list` takes.
    pub spki_sha256: String,
}

/// An acceptor serving a fresh certificate for `names` (offering `alpn`, in order), and the
/// certificate (PEM) of the authority that issued it.
pub fn for_names(names: &[&str], alpn: &[&[u8]]) -> (tokio_rustls::TlsAcceptor, String) {
    let issued = issue(names, alpn);
    (issued.acceptor, issued.ca_pem)
}

/// A fresh authority and a certificate it issued for `names`, served offering `alpn`.
pub fn issue(names: &[&str], alpn: &[&[u8]]) -> Issued {
    use base64::Engine as _;
    use sha2::Digest as _;
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key");
    let leaf = CertificateParams::new(names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>())
        .expect("leaf params")
        .signed_by(&leaf_key, &ca, &ca_key)
        .expect("leaf");
    let spki_sha256 = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(leaf_key.public_key_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .expect("server config");
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    Issued {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca_pem: ca.pem(),
        spki_sha256,
    }
}

/// A TLS front on `ip` (a port the system picks) for the plain HTTP server at `upstream`, with a
/// certificate for `names`: each connection's bytes are passed through. Returns the front's
/// address and the authority's certificate (PEM). Dropping the handle stops it.
pub async fn front(
    ip: std::net::IpAddr,
    names: &[&str],
    upstream: std::net::SocketAddr,
) -> (std::net::SocketAddr, String, tokio::task::JoinHandle<()>) {
    let issued = issue(names, &[]);
    let (address, task) = serve_front(ip, issued.acceptor, upstream).await;
    (address, issued.ca_pem, task)
}

/// A TLS front on `ip` (a port the system picks) that terminates TLS with `acceptor` and passes
/// each connection's bytes to the plain HTTP server at `upstream`. Dropping the handle stops it.
pub async fn serve_front(
    ip: std::net::IpAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    upstream: std::net::SocketAddr,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind((ip, 0))
        .await
        .expect("bind the TLS front");
    let address = listener.local_addr().expect("the front's address");
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (address, task)
}
