//! The tea shop stand-in for `cargo xtask dev --demo-browser` and the web client's browser
//! tests: `steward-demo-shop <directory>` serves `testkit::shop` (a shop page with an order
//! form, an account page wanting a session cookie, and a sign-in form: `ada` / `tea`) on a free
//! loopback port behind TLS for `shop.example`, with a certificate from an authority made at
//! start, writes `provider.env` under the directory and serves until it is stopped (SIGINT or
//! SIGTERM).
//!
//! `provider.env` holds what the browser role takes to send its browsers there instead of the
//! internet (`BROWSER_DEMO_SITE`, the TLS front's address, and `BROWSER_DEMO_SITE_KEY`, its
//! key as Chromium accepts it), the shop's origin and sign-in page (`DEMO_SHOP_ORIGIN`,
//! `DEMO_SHOP_LOGIN_URL`) for a Website Access profile, and `DEMO_SHOP_ORDERS_URL`, where the
//! orders placed are listed as JSON. Nothing here reaches the network.

use std::process::ExitCode;

use axum::extract::State;
use axum::routing::get;
use testkit::shop::{Orders, SHOP, Shop};

/// `GET /demo/orders`: every order placed, each as its form fields.
async fn orders(State(orders): State<Orders>) -> axum::Json<Vec<Vec<(String, String)>>> {
    axum::Json(orders.lock().map(|orders| orders.clone()).unwrap_or_default())
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: steward-demo-shop <directory>");
        return ExitCode::from(2);
    };
    let dir = std::path::PathBuf::from(dir);
    let shop = Shop::start().await;
    let control = testkit::serve(
        axum::Router::new()
            .route("/demo/orders", get(orders))
            .with_state(std::sync::Arc::clone(&shop.orders)),
    )
    .await;
    let provider = format!(
        "BROWSER_DEMO_SITE={}\nBROWSER_DEMO_SITE_KEY={}\nDEMO_SHOP_ORIGIN=https://{SHOP}\n\
         DEMO_SHOP_LOGIN_URL=https://{SHOP}/signin\nDEMO_SHOP_ORDERS_URL={}\n",
        shop.front,
        shop.spki_sha256,
        control.url("/demo/orders"),
    );
    // Written last and renamed into place: its presence says everything is ready.
    let partial = dir.join("provider.env.partial");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&partial, provider))
        .and_then(|()| std::fs::rename(&partial, dir.join("provider.env")));
    if let Err(error) = written {
        eprintln!("steward-demo-shop: cannot write {}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    println!(
        "steward-demo-shop: https://{SHOP} is served at {} (sign in as ada / tea); orders at {}",
        shop.front,
        control.url("/demo/orders")
    );
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            eprintln!("steward-demo-shop: cannot listen for SIGTERM: {error}");
            return ExitCode::FAILURE;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    ExitCode::SUCCESS
}
