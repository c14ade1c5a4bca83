//! Serving a test's HTTP stand-in on 127.0.0.1 at a port the system picks.

use std::future::Future;
use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A server a test started: where it listens. Dropping it stops the server.
#[derive(Debug)]
pub struct Served {
    pub address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Served {
    /// `http://127.0.0.1:port` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

/// Binds 127.0.0.1:0 and runs `serve` on the listener in a task.
pub async fn serve_with<F, Fut>(serve: F) -> Served
where
    F: FnOnce(TcpListener) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("the listener's address");
    let task = tokio::spawn(serve(listener));
    Served { address, task }
}

/// Serves `app` with axum on 127.0.0.1.
pub async fn serve(app: axum::Router) -> Served {
    serve_with(|listener| async move {
        let _ = axum::serve(listener, app).await;
    })
    .await
}
