//! The HTTP API on 127.0.0.1 for one test (with the `api` feature): configured from the
//! environment as the `steward-api` role is, on a store the test gives, with a bearer token in an
//! owner-only file.

use std::collections::HashMap;
use std::path::Path;

use domain::env::FromEnv as _;

use crate::TestDatabase;

/// The running API; it stops when dropped.
pub struct RunningApi {
    /// `http://127.0.0.1:port`.
    pub base: String,
    _server: crate::Served,
}

/// Starts the API on `store`. Its environment is `vars` over two defaults: `DATABASE_URL`, the
/// api login of `db`, and `API_TOKEN_FILE`, an owner-only file written in `dir` holding `token`.
pub async fn start(
    db: &TestDatabase,
    dir: &Path,
    token: &str,
    vars: impl IntoIterator<Item = (String, String)>,
    store: store::Store,
) -> RunningApi {
    start_configured(db, dir, token, vars, store, |_| ()).await
}

/// As [`start`], with `configure` applied to the configuration read from the environment (a
/// part whose flag this release refuses in an environment, turned on for its tests).
pub async fn start_configured(
    db: &TestDatabase,
    dir: &Path,
    token: &str,
    vars: impl IntoIterator<Item = (String, String)>,
    store: store::Store,
    configure: impl FnOnce(&mut api::ApiConfig),
) -> RunningApi {
    let token_file = dir.join("api-token");
    crate::write_private(&token_file, &format!("{token}\n"));
    let mut env: HashMap<String, String> = HashMap::from([
        ("DATABASE_URL".into(), db.url_as("api")),
        ("API_TOKEN_FILE".into(), token_file.display().to_string()),
    ]);
    env.extend(vars);
    let mut config = api::ApiConfig::from_env(|name| env.get(name).cloned()).expect("valid test configuration");
    configure(&mut config);
    let limits = config.listener;
    let app = api::app(config, store);
    let served = crate::serve_with(|listener| async move {
        let _ = api::serve(listener, app, limits, std::future::pending()).await;
    })
    .await;
    RunningApi {
        base: served.url(""),
        _server: served,
    }
}
