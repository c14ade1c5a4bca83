//! The ceremony against a real OAuth stand-in on 127.0.0.1 (authorization and token
//! endpoints, PKCE checked) with a test "browser" that follows the redirect to the loopback
//! callback by hand. Every secret the stand-in hands out, and the client secret, contain
//! [`MARK`], so one search proves none reached the operator's terminal.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::*;
use crate::document::DocumentError;

const MARK: &str = "SENTINEL";
const CLIENT_ID: &str = "steward-test.apps.example";
const CLIENT_SECRET: &str = "SENTINEL-client-secret";

/// How the stand-in misbehaves; every misbehaviour hits the write consent, after the read
/// consent succeeded, so "nothing written" also covers a half-finished ceremony.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    Exact,
    Denied,
    /// The write code's exchange takes three seconds.
    SlowExchange,
    NoRefreshToken,
    TwoScopes,
    OtherScope,
    RefusedCode,
}

struct Issued {
    challenge: String,
    redirect_uri: String,
    scope: String,
}

struct Fake {
    behaviour: Behaviour,
    ports: [u16; 3],
    issued: Mutex<HashMap<String, Issued>>,
    /// Refresh tokens handed out, by scope URL.
    granted: Mutex<HashMap<String, String>>,
    problems: Mutex<Vec<String>>,
    authorizations: AtomicUsize,
    exchanges: AtomicUsize,
}

fn pairs(query: &str) -> Vec<(String, String)> {
    Url::parse(&format!("http://fake/?{query}"))
        .expect("query")
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

fn single(pairs: &[(String, String)], key: &str) -> Result<String, String> {
    let mut values = pairs.iter().filter(|(found, _)| found == key);
    match (values.next(), values.next()) {
        (Some((_, value)), None) => Ok(value.clone()),
        (None, _) => Err(format!("{key} missing")),
        _ => Err(format!("{key} repeated")),
    }
}

fn misbehaves(fake: &Fake, scope: &str) -> Option<Behaviour> {
    (scope == MailScope::Write.url() && fake.behaviour != Behaviour::Exact).then_some(fake.behaviour)
}

impl Fake {
    fn refuse(&self, problem: String) -> Response {
        self.problems.lock().expect("lock").push(problem.clone());
        (StatusCode::BAD_REQUEST, problem).into_response()
    }

    fn authorization(&self, query: &[(String, String)]) -> Result<String, String> {
        for (key, expected) in [
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("code_challenge_method", "S256"),
            ("access_type", "offline"),
            ("prompt", "consent"),
        ] {
            let value = single(query, key)?;
            if value != expected {
                return Err(format!("{key} is {value}"));
            }
        }
        if query.iter().any(|(key, _)| key == "include_granted_scopes") {
            return Err("include_granted_scopes would merge the grants".into());
        }
        let scope = single(query, "scope")?;
        let index = MailScope::ALL
            .iter()
            .position(|designed| designed.url() == scope)
            .ok_or(format!("scope `{scope}` is not exactly one designed scope"))?;
        let redirect_uri = single(query, "redirect_uri")?;
        let expected = format!("http://127.0.0.1:{}/", self.ports[index]);
        if redirect_uri != expected {
            return Err(format!("redirect_uri {redirect_uri}, expected {expected}"));
        }
        let state = single(query, "state")?;
        if state.len() < 22 {
            return Err("state too short".into());
        }
        let challenge = single(query, "code_challenge")?;
        if challenge.len() != 43 || URL_SAFE_NO_PAD.decode(&challenge).is_err() {
            return Err("code_challenge is not a base64url SHA-256".into());
        }
        self.authorizations.fetch_add(1, Ordering::SeqCst);
        let code = format!("{MARK}-code-{}", uuid::Uuid::new_v4());
        let mut location = Url::parse(&redirect_uri).map_err(|error| error.to_string())?;
        match misbehaves(self, &scope) {
            Some(Behaviour::Denied) => {
                location
                    .query_pairs_mut()
                    .append_pair("error", "access_denied")
                    .append_pair("state", &state);
            }
            _ => {
                location
                    .query_pairs_mut()
                    .append_pair("code", &code)
                    .append_pair("state", &state);
            }
        }
        self.issued.lock().expect("lock").insert(
            code,
            Issued {
                challenge,
                redirect_uri,
                scope,
            },
        );
        Ok(location.to_string())
    }

    fn exchange(&self, form: &[(String, String)]) -> Result<Response, String> {
        self.exchanges.fetch_add(1, Ordering::SeqCst);
        if single(form, "grant_type")? != "authorization_code" {
            return Err("grant_type".into());
        }
        if single(form, "client_id")? != CLIENT_ID || single(form, "client_secret")? != CLIENT_SECRET {
            return Err("client credentials".into());
        }
        let code = single(form, "code")?;
        let issued = self
            .issued
            .lock()
            .expect("lock")
            .remove(&code)
            .ok_or("unknown or reused code")?;
        if single(form, "redirect_uri")? != issued.redirect_uri {
            return Err("redirect_uri differs from the authorization's".into());
        }
        let verifier = single(form, "code_verifier")?;
        if !(43..=128).contains(&verifier.len()) {
            return Err("code_verifier length".into());
        }
        if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != issued.challenge {
            return Err("code_verifier does not match the challenge".into());
        }
        let refresh_token = format!("{MARK}-refresh-{}", uuid::Uuid::new_v4());
        let mut answer = serde_json::json!({
            "access_token": format!("{MARK}-access"),
            "expires_in": 3599,
            "refresh_token": refresh_token,
            "scope": issued.scope,
            "token_type": "Bearer",
        });
        match misbehaves(self, &issued.scope) {
            Some(Behaviour::NoRefreshToken) => {
                answer.as_object_mut().expect("object").remove("refresh_token");
            }
            Some(Behaviour::TwoScopes) => {
                answer["scope"] = format!("{} https://www.googleapis.com/auth/userinfo.email", issued.scope).into();
            }
            Some(Behaviour::OtherScope) => answer["scope"] = "https://mail.google.com/".into(),
            Some(Behaviour::RefusedCode) => {
                let refusal =
                    serde_json::json!({"error": "invalid_grant", "error_description": format!("{MARK} {code}")});
                return Ok((StatusCode::BAD_REQUEST, axum::Json(refusal)).into_response());
            }
            _ => {}
        }
        self.granted
            .lock()
            .expect("lock")
            .insert(issued.scope.clone(), refresh_token);
        Ok(axum::Json(answer).into_response())
    }
}

async fn authorize(State(fake): State<Arc<Fake>>, RawQuery(query): RawQuery) -> Response {
    match fake.authorization(&pairs(&query.unwrap_or_default())) {
        Ok(location) => (StatusCode::FOUND, [(header::LOCATION, location)]).into_response(),
        Err(problem) => fake.refuse(problem),
    }
}

async fn token(State(fake): State<Arc<Fake>>, body: String) -> Response {
    // The read code was exchanged first; this is the write code's.
    if fake.behaviour == Behaviour::SlowExchange && fake.exchanges.load(Ordering::SeqCst) == 1 {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    match fake.exchange(&pairs(&body)) {
        Ok(response) => response,
        Err(problem) => fake.refuse(problem),
    }
}

/// Every port this test process chose or bound for itself: parallel tests never choose the
/// same "free" port, nor one another test's stand-in holds.
static CHOSEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

fn fresh_listener() -> std::net::TcpListener {
    loop {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        if CHOSEN.lock().expect("lock").insert(port) {
            return listener;
        }
    }
}

/// Three distinct ports nothing listens on, for one ceremony's consents.
fn free_ports() -> [u16; 3] {
    let held = [fresh_listener(), fresh_listener(), fresh_listener()];
    held.map(|listener| listener.local_addr().expect("address").port())
}

struct Setup {
    _root: tempfile::TempDir,
    root: PathBuf,
    client_file: PathBuf,
    output: PathBuf,
    config: Config,
    fake: Arc<Fake>,
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

async fn setup(behaviour: Behaviour) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let client_file = root.join("client_secret.json");
    let client = serde_json::json!({"installed": {
        "client_id": CLIENT_ID,
        "project_id": "steward-test",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "client_secret": CLIENT_SECRET,
        "redirect_uris": ["http://localhost"],
    }});
    std::fs::write(&client_file, client.to_string()).expect("client file");
    set_mode(&client_file, 0o600);
    let ports = free_ports();
    let fake = Arc::new(Fake {
        behaviour,
        ports,
        issued: Mutex::default(),
        granted: Mutex::default(),
        problems: Mutex::default(),
        authorizations: AtomicUsize::new(0),
        exchanges: AtomicUsize::new(0),
    });
    let app = axum::Router::new()
        .route("/auth", axum::routing::get(authorize))
        .route("/token", axum::routing::post(token))
        .with_state(fake.clone());
    let listener = fresh_listener();
    listener.set_nonblocking(true).expect("nonblocking");
    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    Setup {
        output: root.join("mail"),
        _root: dir,
        root,
        client_file,
        config: Config {
            authorize_url: format!("http://{address}/auth"),
            token_url: format!("http://{address}/token"),
            ports,
        },
        fake,
    }
}

/// The operator's browser: requests the authorization URL, follows its redirect by hand to
/// the loopback, asking it for a favicon first as browsers do.
fn browser(visits: Arc<AtomicUsize>) -> impl FnMut(MailScope, &str) + Send {
    forging_browser(visits, &[])
}

/// The same, but before the genuine callback a hostile page (or local process) sends each
/// of `forged` (queries) to the callback's port; each must be turned away with 400.
fn forging_browser(visits: Arc<AtomicUsize>, forged: &[&str]) -> impl FnMut(MailScope, &str) + Send {
    let forged: Vec<String> = forged.iter().map(|query| (*query).to_owned()).collect();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    move |_scope: MailScope, url: &str| {
        visits.fetch_add(1, Ordering::SeqCst);
        let (http, url, forged) = (http.clone(), url.to_owned(), forged.clone());
        tokio::spawn(async move {
            let answer = http.get(&url).send().await.expect("authorization endpoint");
            if answer.status().as_u16() != 302 {
                return; // The stand-in recorded the problem.
            }
            let location = answer.headers()["location"].to_str().expect("location").to_owned();
            let callback = Url::parse(&location).expect("callback URL");
            assert_eq!(callback.host_str(), Some("127.0.0.1"));
            for query in &forged {
                let mut target = callback.clone();
                target.set_query(Some(query));
                let turned_away = http.get(target).send().await.expect("forged callback");
                assert_eq!(turned_away.status().as_u16(), 400, "{query}");
            }
            let favicon = http
                .get(callback.join("/favicon.ico").expect("favicon URL"))
                .send()
                .await
                .expect("favicon");
            assert_eq!(favicon.status().as_u16(), 404);
            let page = http.get(callback).send().await.expect("callback");
            assert_eq!(page.status().as_u16(), 200);
            assert!(page.text().await.expect("page").contains("close this window"));
        });
    }
}

struct Finished {
    result: Result<Vec<Written>, BootstrapError>,
    stdout: String,
    stderr: String,
}

async fn ceremony(
    setup: &Setup,
    account: Option<&str>,
    answer: &str,
    browser: &mut (dyn Browser + Send),
    clock: &(dyn Clock + Sync),
) -> Finished {
    let arguments = Arguments {
        client_file: setup.client_file.clone(),
        output_directory: setup.output.clone(),
        account_id: account.map(str::to_owned),
    };
    let mut input = answer.as_bytes();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let host = Host {
        input: &mut input,
        prompt: &mut stderr,
        output: &mut stdout,
        browser,
        clock,
    };
    let result = tokio::time::timeout(Duration::from_secs(20), run(&arguments, &setup.config, host))
        .await
        .expect("the ceremony ends on its own");
    let finished = Finished {
        result,
        stdout: String::from_utf8(stdout).expect("utf-8"),
        stderr: String::from_utf8(stderr).expect("utf-8"),
    };
    assert!(
        !finished.stdout.contains(MARK) && !finished.stderr.contains(MARK),
        "a secret reached the terminal:\n{}\n{}",
        finished.stdout,
        finished.stderr
    );
    if let Err(error) = &finished.result {
        assert!(!error.to_string().contains(MARK), "{error}");
    }
    finished
}

/// Runs with the real clock and the following browser; returns the browser's visit count.
async fn follow(setup: &Setup, account: Option<&str>, answer: &str) -> (Finished, usize) {
    let visits = Arc::new(AtomicUsize::new(0));
    let mut browser = browser(visits.clone());
    let finished = ceremony(setup, account, answer, &mut browser, &SystemClock).await;
    (finished, visits.load(Ordering::SeqCst))
}

fn refusal(finished: &Finished, message: &str) -> String {
    let error = finished.result.as_ref().expect_err("refused").to_string();
    assert!(error.starts_with(message), "expected `{message}`, got `{error}`");
    assert!(finished.stdout.is_empty(), "{}", finished.stdout);
    error
}

fn assert_nothing_written(setup: &Setup) {
    for scope in MailScope::ALL {
        let path = setup.output.join(scope.file_name());
        assert!(
            std::fs::symlink_metadata(&path).is_err(),
            "{} was written",
            path.display()
        );
    }
}

fn assert_no_problems(setup: &Setup) {
    let problems = setup.fake.problems.lock().expect("lock");
    assert!(problems.is_empty(), "the OAuth stand-in saw: {problems:?}");
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("metadata").mode() & 0o7777
}

mod ceremony;
