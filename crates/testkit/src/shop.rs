//! A small tea shop on loopback behind TLS for `shop.example`, for the hosted browser's tests and
//! its offline demo: a shop page (an order form: a name, a size, `Place order`), an account page
//! that wants a session cookie (and rotates it) and shows what local storage holds under `note`,
//! and a sign-in form (`ada` / `tea`) that sets both. Its certificate comes from an authority
//! made at run time; the browser accepts exactly its key (`spki_sha256`).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};
use axum::routing::get;

/// The shop's host name.
pub const SHOP: &str = "shop.example";
/// The session cookie the shop's account page wants, and the one it rotates it to.
pub const SESSION: &str = "s1";
pub const ROTATED: &str = "s2";

/// The orders placed, each as its form fields.
pub type Orders = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// The shop's routes, recording orders in `orders`.
pub fn router(orders: Orders) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async {
                Html(
                    r#"<!doctype html><title>The shop</title>
<h1>Tea</h1>
<form method="post" action="/order">
  <label for="name">Your name</label> <input id="name" name="name">
  <label for="size">Size</label> <select id="size" name="size"><option value="small">Small</option><option value="large">Large</option></select>
  <button type="submit">Place order</button>
</form>
<a href="/about">About us</a>"#,
                )
            }),
        )
        .route(
            "/order",
            axum::routing::post(|State(orders): State<Orders>, body: String| async move {
                let fields = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                orders.lock().expect("orders").push(fields);
                Html("<!doctype html><title>Ordered</title><p>Thank you for your order")
            }),
        )
        .route(
            "/about",
            get(|| async { Html("<!doctype html><title>About</title><p>A small tea shop") }),
        )
        .route("/account", get(account))
        .route("/signin", get(sign_in_form).post(sign_in))
        .with_state(orders)
}

/// Signed in with the session cookie (which it then rotates); the page also shows what local
/// storage holds under `note`.
async fn account(headers: HeaderMap) -> impl IntoResponse {
    let cookies = headers
        .get_all("cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join("; ");
    let signed_in = cookies
        .split("; ")
        .any(|pair| pair == format!("sid={SESSION}") || pair == format!("sid={ROTATED}"));
    let note = "<p id=note></p><script>document.getElementById('note').textContent = 'Note: ' + localStorage.getItem('note')</script>";
    if signed_in {
        (
            [(
                "set-cookie",
                format!("sid={ROTATED}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=86400"),
            )],
            Html(format!(
                "<!doctype html><title>Account</title><p>Signed in as Ada</p>{note}"
            )),
        )
            .into_response()
    } else {
        Html(format!(
            "<!doctype html><title>Sign in</title><p>Please sign in</p>{note}"
        ))
        .into_response()
    }
}

/// Where the sign-in form's fields are on the page (CSS pixels): the remote sign-in test clicks
/// there.
pub const USER_FIELD: (f64, f64) = (120.0, 115.0);
pub const PASSWORD_FIELD: (f64, f64) = (120.0, 165.0);

async fn sign_in_form() -> Html<&'static str> {
    Html(
        r#"<!doctype html><title>Sign in to the shop</title><body style="margin:0">
<form method="post" action="/signin">
<input name="user" aria-label="User" style="position:absolute;left:20px;top:100px;width:200px;height:30px">
<input name="password" type="password" aria-label="Password" style="position:absolute;left:20px;top:150px;width:200px;height:30px">
<button style="position:absolute;left:20px;top:200px">Sign in</button>
</form>"#,
    )
}

/// `ada` / `tea` signs in: the session cookie, and a note in local storage.
async fn sign_in(body: String) -> axum::response::Response {
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if field("user") == Some("ada") && field("password") == Some("tea") {
        (
            [("set-cookie", format!("sid={SESSION}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=86400"))],
            Html("<!doctype html><title>Welcome</title><p>Welcome back<script>localStorage.setItem('note', 'signed in remotely')</script>"),
        )
            .into_response()
    } else {
        Html("<!doctype html><title>Sign in to the shop</title><p>Wrong user or password").into_response()
    }
}

/// The shop, served: its TLS front (every name resolves here), its key and its orders.
pub struct Shop {
    /// The TLS front on loopback: the browser's proxy sends `shop.example` here.
    pub front: SocketAddr,
    /// The certificate's key, as Chromium's `--ignore-certificate-errors-spki-list` takes it.
    pub spki_sha256: String,
    pub orders: Orders,
    _served: (crate::Served, tokio::task::JoinHandle<()>),
}

impl Shop {
    pub async fn start() -> Shop {
        let orders: Orders = Arc::default();
        let site = crate::serve(router(Arc::clone(&orders))).await;
        let issued = crate::tls::issue(&[SHOP], &[]);
        let localhost: IpAddr = [127, 0, 0, 1].into();
        let (front, task) = crate::tls::serve_front(localhost, issued.acceptor, site.address).await;
        Shop {
            front,
            spki_sha256: issued.spki_sha256,
            orders,
            _served: (site, task),
        }
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        self._served.1.abort();
    }
}
