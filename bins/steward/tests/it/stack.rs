//! A stack for one test: a fresh database, the API on 127.0.0.1, and (when asked) an in-process
//! worker on the offline scripted model.

use std::collections::HashMap;

use client::Client;
use testkit::TestDatabase;

pub const TOKEN: &str = "client-sdk-test-token-0123456789abcdefghij";

pub struct Stack {
    pub base: String,
    pub db: TestDatabase,
    _dir: tempfile::TempDir,
    _api: testkit::api::RunningApi,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Stack {
    /// The API alone, granting `scopes`.
    pub async fn api(scopes: &str) -> Stack {
        Stack::api_with(scopes, &[]).await
    }

    /// The API granting `scopes`, with `flags` on (or other settings).
    pub async fn api_with(scopes: &str, flags: &[(&str, &str)]) -> Stack {
        let db = TestDatabase::new().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let mut vars: HashMap<String, String> = HashMap::from([("AUTH_SCOPES".into(), scopes.to_owned())]);
        vars.extend(
            flags
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        );
        let api = testkit::api::start(&db, dir.path(), TOKEN, vars, db.store_as("api").await).await;
        Stack {
            base: api.base.clone(),
            db,
            _dir: dir,
            _api: api,
            tasks: Vec::new(),
        }
    }

    /// The API granting `scopes` (with the notification routes) and a worker running the
    /// scripted model.
    pub async fn with_worker(scopes: &str) -> Stack {
        let flags = [
            ("AGENT_NOTIFICATION_API_ENABLED", "1"),
            ("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1"),
        ];
        let mut stack = Stack::api_with(scopes, &flags).await;
        let settings = agent::worker::Settings {
            worker_id: "cli-test-worker".into(),
            concurrency: 4,
            lease_seconds: 5,
            reconcile: agent::worker::ReconcilePolicy {
                attempts: 6,
                spacing_seconds: 30,
            },
        };
        let executor = agent::executor::Executor {
            store: stack.db.store_as("worker").await,
            providers: agent::executor::Providers::new(None),
            http: reqwest::Client::new(),
            mail: None,
            subscriptions: false,
            calls: None,
            browser: None,
            memory: false,
        };
        stack.tasks.push(tokio::spawn(agent::worker::run(
            settings,
            executor,
            std::future::pending(),
        )));
        stack
    }

    pub fn client(&self) -> Client {
        Client::new(&self.base, TOKEN).expect("client")
    }
}
