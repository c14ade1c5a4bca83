//! The database going away and coming back, for one test: a TCP relay on 127.0.0.1 in front of
//! a test database's Unix socket that can be switched off (refusing new connections and cutting
//! the open ones, as a stopped server does) and on again, without touching the server the other
//! tests share.

use std::sync::Arc;

use tokio::net::{TcpListener, UnixStream};
use tokio::sync::watch;

/// The relay; it stops when dropped.
pub struct DatabaseRelay {
    port: u16,
    socket: String,
    up: Arc<watch::Sender<bool>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DatabaseRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A test database URL (`postgres://user@localhost:PORT/db?host=DIR`) taken apart: the server's
/// Unix socket, what comes before the host (`postgres://user@`) and the database path (`/db`).
struct Parts<'a> {
    socket: String,
    user: &'a str,
    database: &'a str,
}

fn parts(url: &str) -> Parts<'_> {
    let (base, query) = url.split_once('?').expect("a URL over the Unix socket");
    let dir = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("host="))
        .expect("the socket directory");
    let host_start = base.find('@').expect("a user") + 1;
    let host_end = host_start + base[host_start..].find('/').expect("a database");
    let port = base[host_start..host_end]
        .rsplit_once(':')
        .map_or("5432", |(_, port)| port);
    Parts {
        socket: format!("{dir}/.s.PGSQL.{port}"),
        user: &base[..host_start],
        database: &base[host_end..],
    }
}

impl DatabaseRelay {
    /// A relay to the server of `url` (any test database URL), up.
    pub async fn start(url: &str) -> DatabaseRelay {
        let socket = parts(url).socket;
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("address").port();
        let up = Arc::new(watch::channel(true).0);
        let switch = up.clone();
        let target = socket.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut state = switch.subscribe();
                if !*state.borrow_and_update() {
                    continue; // Refused: the connection closes at once.
                }
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = UnixStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = state.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        DatabaseRelay { port, socket, up, task }
    }

    /// `url` (a test database URL for some login) through the relay.
    pub fn url(&self, url: &str) -> String {
        let parts = parts(url);
        assert_eq!(parts.socket, self.socket, "a database of the relay's server");
        format!("{}127.0.0.1:{}{}", parts.user, self.port, parts.database)
    }

    /// The database goes away: new connections are refused and open ones cut.
    pub fn down(&self) {
        self.up.send_replace(false);
    }

    /// The database is back.
    pub fn up(&self) {
        self.up.send_replace(true);
    }
}
