//! TLS for a test's HTTPS stand-in (with the `tls` feature): a certificate authority made at run
//! time and a certificate it issued for `localhost`, so a client that trusts only that authority
//! can verify the server.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, PKCS_ECDSA_P256_SHA256};

/// An acceptor serving a fresh certificate for `localhost` (offering `alpn`, in order), and the
/// certificate (PEM) of the authority that issued it.
pub fn localhost(alpn: &[&[u8]]) -> (tokio_rustls::TlsAcceptor, String) {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key");
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .expect("leaf params")
        .signed_by(&leaf_key, &ca, &ca_key)
        .expect("leaf");
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
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem())
}
