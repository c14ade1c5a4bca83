//! `apns DIR`: not a measurement but the push provider stand-in of `cargo xtask soak`: an HTTP/2
//! TLS server speaking the APNs provider API on a free loopback port, with a certificate for
//! `localhost` from an authority made at start. It writes `DIR/ca.pem` and then `DIR/url` (its
//! presence says it is ready), answers every push `200`, and appends one line per push to
//! `DIR/pushes.log`: the push type, the `apns-collapse-id` (the notification's id) and whether a
//! provider token came with it. It serves until killed.

use std::convert::Infallible;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;

pub async fn apns(args: &[String]) -> anyhow::Result<Value> {
    let dir = std::path::PathBuf::from(args.first().context("missing DIR")?);
    let (acceptor, ca_pem) = testkit::tls::localhost(&[b"h2"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("pushes.log"))
            .context("open pushes.log")?,
    ));
    std::fs::write(dir.join("ca.pem"), ca_pem).context("write ca.pem")?;
    std::fs::write(dir.join("url.partial"), format!("https://localhost:{port}")).context("write url")?;
    std::fs::rename(dir.join("url.partial"), dir.join("url")).context("write url")?;
    loop {
        let (tcp, _) = listener.accept().await?;
        let (acceptor, log) = (acceptor.clone(), log.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else { return };
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let log = log.clone();
                async move { Ok::<_, Infallible>(answer(request, &log).await) }
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn answer(request: Request<Incoming>, log: &Mutex<std::fs::File>) -> Response<Full<Bytes>> {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("-")
            .to_owned()
    };
    let line = format!(
        "{} {} {}\n",
        header("apns-push-type"),
        header("apns-collapse-id"),
        request.headers().contains_key("authorization")
    );
    // The body is read (as the provider does) but not kept: it is the owner's notification.
    let _ = request.into_body().collect().await;
    if let Ok(mut file) = log.lock() {
        let _ = file.write_all(line.as_bytes());
    }
    Response::new(Full::new(Bytes::new()))
}
