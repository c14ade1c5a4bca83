//! The ceremony's steps, each refusing before the next one starts.

use super::*;

#[tokio::test]
async fn three_consents_write_three_owner_only_documents_tagged_for_the_account() {
    let setup = setup(Behaviour::Exact).await;
    let (finished, visits) = follow(&setup, Some("work"), "CONTINUE\n").await;
    let written = finished.result.expect("the ceremony succeeds");
    assert_no_problems(&setup);
    assert_eq!(visits, 3);
    assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 3);

    let expected: Vec<String> = MailScope::ALL
        .iter()
        .map(|scope| format!("{} {}", setup.output.join(scope.file_name()).display(), scope.url()))
        .collect();
    assert_eq!(finished.stdout.lines().collect::<Vec<_>>(), expected);
    assert_eq!(
        written.iter().map(|document| document.scope).collect::<Vec<_>>(),
        MailScope::ALL
    );

    assert_eq!(mode(&setup.output), 0o700);
    let granted = setup.fake.granted.lock().expect("lock").clone();
    for scope in MailScope::ALL {
        let path = setup.output.join(scope.file_name());
        assert_eq!(mode(&path), 0o600, "{}", path.display());
        let bytes = std::fs::read(&path).expect("document");
        let keys: BTreeSet<String> = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes)
            .expect("object")
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            ["account_id", "client_id", "client_secret", "refresh_token", "scope"]
                .map(String::from)
                .into()
        );
        let document = CredentialDocument::parse(&bytes, scope, Some("work")).expect("parses as its scope");
        assert_eq!(document.account_id.as_deref(), Some("work"));
        assert_eq!(document.client_id, CLIENT_ID);
        assert_eq!(document.client_secret(), CLIENT_SECRET);
        assert_eq!(
            Some(document.refresh_token()),
            granted.get(scope.url()).map(String::as_str)
        );
        assert!(matches!(
            CredentialDocument::parse(&bytes, scope, Some("home")),
            Err(DocumentError::AccountMismatch)
        ));
        assert!(CredentialDocument::load(&path, scope, Some("work")).is_ok());
    }

    // The disclosure came first, with what the operator must know.
    for needed in [
        MailScope::Read.url(),
        MailScope::Write.url(),
        MailScope::Send.url(),
        "AI model provider",
        "Retention",
        REVOKE_URL,
        "delete the three files",
        "five minutes",
        "Type CONTINUE",
    ] {
        assert!(finished.stderr.contains(needed), "disclosure lacks `{needed}`");
    }
}

#[tokio::test]
async fn an_existing_empty_owner_only_directory_receives_untagged_documents() {
    let setup = setup(Behaviour::Exact).await;
    std::fs::create_dir(&setup.output).expect("mkdir");
    set_mode(&setup.output, 0o700);
    let (finished, _) = follow(&setup, None, "CONTINUE\r\n").await;
    finished.result.expect("the ceremony succeeds");
    assert_no_problems(&setup);
    assert_eq!(finished.stdout.lines().count(), 3);
    for scope in MailScope::ALL {
        let bytes = std::fs::read(setup.output.join(scope.file_name())).expect("document");
        let document = CredentialDocument::parse(&bytes, scope, Some("any")).expect("parses");
        assert_eq!(document.account_id, None);
    }
}

#[tokio::test]
async fn the_client_file_must_be_an_owner_only_desktop_client() {
    let mut setup = setup(Behaviour::Exact).await;
    let original = setup.client_file.clone();
    let check = |finished: &Finished, setup: &Setup, visits: usize| {
        assert_eq!(visits, 0);
        assert!(
            finished.stderr.is_empty(),
            "the disclosure was shown: {}",
            finished.stderr
        );
        assert!(!setup.output.exists(), "the output directory was created");
    };

    set_mode(&original, 0o644);
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    refusal(&finished, "OAuth client file must be owner-only");
    check(&finished, &setup, visits);
    set_mode(&original, 0o600);

    setup.client_file = setup.root.join("linked.json");
    std::os::unix::fs::symlink(&original, &setup.client_file).expect("symlink");
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    refusal(&finished, "OAuth client file must be owner-only");
    check(&finished, &setup, visits);

    setup.client_file = PathBuf::from("client_secret.json");
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    refusal(&finished, "OAuth client file must be owner-only");
    check(&finished, &setup, visits);

    set_mode(&original, 0o400);
    setup.client_file = original.clone();
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "OAuth client file must be owner-only").contains("0400"));
    check(&finished, &setup, visits);
    set_mode(&original, 0o600);

    setup.client_file = setup.root.join("absent.json");
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "OAuth client file must be owner-only").contains("does not exist"));
    check(&finished, &setup, visits);

    setup.client_file = setup.root.join("web.json");
    std::fs::write(
        &setup.client_file,
        format!(r#"{{"web": {{"client_id": "{CLIENT_ID}", "client_secret": "{CLIENT_SECRET}"}}}}"#),
    )
    .expect("web client");
    set_mode(&setup.client_file, 0o600);
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "OAuth client file").contains("Desktop-app client"));
    check(&finished, &setup, visits);
}

#[tokio::test]
async fn existing_output_is_refused_before_the_disclosure() {
    let setup = setup(Behaviour::Exact).await;
    std::fs::create_dir(&setup.output).expect("mkdir");
    set_mode(&setup.output, 0o700);
    let existing = setup.output.join(MailScope::Send.file_name());
    std::fs::write(&existing, "keep").expect("existing document");
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    refusal(&finished, "credential output already exists");
    assert_eq!((visits, finished.stderr.as_str()), (0, ""));
    assert_eq!(std::fs::read_to_string(&existing).expect("kept"), "keep");
    for scope in [MailScope::Read, MailScope::Write] {
        assert!(!setup.output.join(scope.file_name()).exists());
    }
    std::fs::remove_file(&existing).expect("remove");

    std::fs::write(setup.output.join("notes.txt"), "x").expect("other file");
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "credential output already exists").contains("not empty"));
    assert_eq!((visits, finished.stderr.as_str()), (0, ""));
    assert_nothing_written(&setup);
    std::fs::remove_file(setup.output.join("notes.txt")).expect("remove");

    // An empty directory others can read is not tightened behind the operator's back.
    set_mode(&setup.output, 0o755);
    let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "output directory").contains("0755"));
    assert_eq!(mode(&setup.output), 0o755);
    std::fs::remove_dir(&setup.output).expect("rmdir");

    std::fs::write(&setup.output, "a file").expect("file in the way");
    let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "credential output already exists").contains("is not a directory"));
    std::fs::remove_file(&setup.output).expect("remove");

    let nested = Setup {
        output: setup.root.join("absent/mail"),
        ..setup
    };
    let (finished, _) = follow(&nested, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "output directory").contains("parent"));
    assert!(!nested.root.join("absent").exists());
}

#[tokio::test]
async fn a_busy_consent_port_is_refused_before_the_disclosure() {
    let setup = setup(Behaviour::Exact).await;
    let busy = setup.config.ports[1];
    let _taken = std::net::TcpListener::bind(("127.0.0.1", busy)).expect("take the write port");
    let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
    let error = refusal(&finished, "authorization did not complete");
    assert!(error.contains(&format!("127.0.0.1:{busy}")), "{error}");
    assert_eq!((visits, finished.stderr.as_str()), (0, ""));
    assert_nothing_written(&setup);
    assert!(!setup.output.exists());
}

#[tokio::test]
async fn anything_but_continue_stops_before_any_consent() {
    let setup = setup(Behaviour::Exact).await;
    for answer in [
        "continue\n",
        "CONTINUE \n",
        " CONTINUE\n",
        "yes\n",
        "\n",
        "",
        "CONTINUE",
    ] {
        let (finished, visits) = follow(&setup, Some("work"), answer).await;
        let error = refusal(&finished, "bootstrap stopped");
        assert!(error.contains("CONTINUE"), "{error}");
        assert!(
            finished.stderr.contains(MailScope::Send.url()),
            "the disclosure is shown first"
        );
        assert_eq!(visits, 0, "answer {answer:?}");
        assert_nothing_written(&setup);
        assert!(!setup.output.exists());
    }
    assert_eq!(setup.fake.authorizations.load(Ordering::SeqCst), 0);
    // The loopback ports were released.
    for port in setup.config.ports {
        std::net::TcpListener::bind(("127.0.0.1", port)).expect("port released");
    }
}

#[tokio::test]
async fn callbacks_without_the_consents_state_are_turned_away_and_cannot_end_it() {
    let setup = setup(Behaviour::Exact).await;
    let visits = Arc::new(AtomicUsize::new(0));
    let mut browser = forging_browser(
        visits.clone(),
        &[
            "error=access_denied",
            "error=access_denied&state=forged",
            "code=forged-code&state=forged",
            "code=forged-code",
        ],
    );
    let finished = ceremony(&setup, None, "CONTINUE\n", &mut browser, &SystemClock).await;
    finished.result.expect("the genuine callbacks complete the ceremony");
    assert_eq!(visits.load(Ordering::SeqCst), 3);
    // Only the genuine codes reached the token endpoint (a forged one would be a problem).
    assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 3);
    assert_no_problems(&setup);
}

#[tokio::test]
async fn a_refused_consent_does_not_complete() {
    let setup = setup(Behaviour::Denied).await;
    let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
    assert!(refusal(&finished, "authorization did not complete").contains("access_denied"));
    assert_nothing_written(&setup);
    assert!(!setup.output.exists());
    assert_no_problems(&setup);
}

#[tokio::test]
async fn the_five_minute_limit_follows_the_injected_clock() {
    let setup = setup(Behaviour::Exact).await;
    let start = Instant::now();
    let skipped = Arc::new(AtomicU64::new(0));
    let clock = {
        let skipped = skipped.clone();
        move || start + Duration::from_secs(skipped.load(Ordering::SeqCst))
    };
    let visits = Arc::new(AtomicUsize::new(0));
    let mut follow_browser = browser(visits.clone());
    // The read consent completes; at the write consent the operator walks away and the
    // clock moves past the limit while no callback arrives.
    let mut browser = |scope: MailScope, url: &str| match scope {
        MailScope::Read => follow_browser(scope, url),
        _ => skipped.store(CEREMONY_LIMIT.as_secs() + 1, Ordering::SeqCst),
    };
    let real = Instant::now();
    let finished = ceremony(&setup, None, "CONTINUE\n", &mut browser, &clock).await;
    assert!(refusal(&finished, "authorization did not complete").contains("five-minute"));
    assert!(
        real.elapsed() < Duration::from_secs(10),
        "noticed at the next clock poll"
    );
    assert_eq!(visits.load(Ordering::SeqCst), 1);
    assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 1);
    assert_nothing_written(&setup);
    assert!(!setup.output.exists());
}

#[tokio::test]
async fn the_five_minute_limit_covers_the_code_exchanges() {
    // The clock passes the limit while the write code is being exchanged: the grant that
    // came back late is not used.
    let late = setup(Behaviour::Exact).await;
    let start = Instant::now();
    let fake = late.fake.clone();
    let clock = move || {
        let passed = fake.exchanges.load(Ordering::SeqCst) >= 2;
        start + if passed { CEREMONY_LIMIT } else { Duration::ZERO }
    };
    let mut browser_ = browser(Arc::new(AtomicUsize::new(0)));
    let finished = ceremony(&late, None, "CONTINUE\n", &mut browser_, &clock).await;
    let error = refusal(&finished, "authorization did not complete");
    assert!(error.contains("five-minute") && error.contains("write"), "{error}");
    assert_eq!(late.fake.exchanges.load(Ordering::SeqCst), 2);
    assert_nothing_written(&late);
    assert!(!late.output.exists());

    // One second is left when the write consent starts, and its exchange takes three: the
    // exchange is abandoned when the time is up.
    let slow = setup(Behaviour::SlowExchange).await;
    let start = Instant::now();
    let skipped = Arc::new(AtomicU64::new(0));
    let clock = {
        let skipped = skipped.clone();
        move || start + Duration::from_secs(skipped.load(Ordering::SeqCst))
    };
    let mut follow_browser = browser(Arc::new(AtomicUsize::new(0)));
    let mut browser_ = |scope: MailScope, url: &str| {
        if scope == MailScope::Write {
            skipped.store(CEREMONY_LIMIT.as_secs() - 1, Ordering::SeqCst);
        }
        follow_browser(scope, url);
    };
    let real = Instant::now();
    let finished = ceremony(&slow, None, "CONTINUE\n", &mut browser_, &clock).await;
    let error = refusal(&finished, "authorization did not complete");
    assert!(error.contains("five-minute") && error.contains("write"), "{error}");
    assert!(
        real.elapsed() < Duration::from_secs(3),
        "the exchange was not waited out"
    );
    assert_nothing_written(&slow);
    assert!(!slow.output.exists());
}

#[test]
fn a_failed_write_removes_every_document_it_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let client = Client {
        id: CLIENT_ID.into(),
        secret: CLIENT_SECRET.into(),
    };
    // The third document collides with the second: the first two are written, then removed.
    let grants = [MailScope::Read, MailScope::Write, MailScope::Write].map(|scope| Grant {
        scope,
        refresh_token: format!("{MARK}-refresh"),
    });
    let uid = hardening::process::effective_uid();
    let created = dir.path().join("created");
    let error = write_documents(&created, false, uid, &client, &grants, None).expect_err("collides");
    assert!(matches!(error, BootstrapError::OutputExists(_)), "{error}");
    assert!(!created.exists(), "the directory it created is removed too");

    let existing = dir.path().join("existing");
    std::fs::create_dir(&existing).expect("mkdir");
    set_mode(&existing, 0o700);
    let error = write_documents(&existing, true, uid, &client, &grants, Some("work")).expect_err("collides");
    assert!(matches!(error, BootstrapError::OutputExists(_)), "{error}");
    assert_eq!(
        std::fs::read_dir(&existing).expect("list").count(),
        0,
        "an existing directory is left as it was: empty"
    );
}

#[tokio::test]
async fn a_grant_without_a_refresh_token_or_the_exact_scope_is_refused() {
    for behaviour in [Behaviour::NoRefreshToken, Behaviour::TwoScopes, Behaviour::OtherScope] {
        let setup = setup(behaviour).await;
        let (finished, _) = follow(&setup, Some("work"), "CONTINUE\n").await;
        let error = refusal(&finished, "token exchange omitted the exact grant");
        assert!(error.contains("write"), "{behaviour:?}: {error}");
        assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 2, "{behaviour:?}");
        assert_nothing_written(&setup);
        assert!(!setup.output.exists());
        assert_no_problems(&setup);
    }
}

#[tokio::test]
async fn a_token_endpoint_refusal_does_not_complete_and_is_not_echoed() {
    let setup = setup(Behaviour::RefusedCode).await;
    let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
    let error = refusal(&finished, "authorization did not complete");
    assert!(error.contains("invalid_grant") && error.contains("HTTP 400"), "{error}");
    assert_nothing_written(&setup);
    assert_no_problems(&setup);
}

#[tokio::test]
async fn the_account_id_and_the_endpoints_are_checked_first() {
    let setup = setup(Behaviour::Exact).await;
    for id in ["Work", "", "work@example.com", "wörk"] {
        let (finished, _) = follow(&setup, Some(id), "CONTINUE\n").await;
        refusal(&finished, "account id");
        assert!(finished.stderr.is_empty());
    }
    for (url, accepted) in [
        ("https://accounts.example/auth", true),
        ("http://127.0.0.1:9/token", true),
        ("http://[::1]:9/token", true),
        ("http://localhost:9/token", true),
        ("http://accounts.example/auth", false),
        ("https://user:pass@accounts.example/auth", false),
        ("ftp://accounts.example/", false),
        ("accounts.example/auth", false),
    ] {
        let checked = endpoint("token", TOKEN_URL_VARIABLE, url);
        assert_eq!(checked.is_ok(), accepted, "{url}");
        if let Err(error) = checked {
            assert!(!error.to_string().contains("pass"), "{error}");
        }
    }
    let insecure = Setup {
        config: Config {
            token_url: "http://oauth.example/token".into(),
            ..setup.config.clone()
        },
        ..setup
    };
    let (finished, _) = follow(&insecure, None, "CONTINUE\n").await;
    let error = refusal(&finished, "the OAuth token endpoint");
    assert!(error.contains(TOKEN_URL_VARIABLE), "{error}");
}

#[test]
fn only_the_callback_ends_a_consent() {
    let head = |target: &str| format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let outcome = |head: &str| {
        let (status, page, callback) = classify(head, "expected", MailScope::Read);
        let callback = callback.map(|callback| match callback {
            Callback::Code(code) => Ok(code),
            Callback::Refused(reason) => Err(reason),
        });
        (status, page, callback)
    };
    for target in ["/favicon.ico", "/", "/?foo=bar", "/other?code=a&state=expected"] {
        assert!(outcome(&head(target)).2.is_none(), "{target}");
    }
    assert_eq!(
        outcome("POST /?code=a&state=expected HTTP/1.1\r\n\r\n").0,
        "405 Method Not Allowed"
    );
    assert_eq!(outcome("garbage\r\n\r\n").0, "400 Bad Request");
    let (status, page, callback) = outcome(&head("/?code=the%2Fcode&state=expected&scope=x"));
    assert_eq!((status, callback), ("200 OK", Some(Ok("the/code".to_owned()))));
    assert!(page.contains("close this window") && !page.contains("the/code"));
    // Without this consent's state, nothing ends it: not a code, not an error.
    for target in [
        "/?code=a&state=other",
        "/?code=a",
        "/?error=access_denied",
        "/?error=access_denied&state=other",
    ] {
        let (status, page, callback) = outcome(&head(target));
        assert_eq!((status, callback), ("400 Bad Request", None), "{target}");
        assert!(!page.contains("did not complete"), "{page}");
    }
    for target in [
        "/?state=expected",
        "/?code=&state=expected",
        "/?error=access_denied&state=expected",
        "/?error=%3Cscript%3E&state=expected",
    ] {
        let (_, page, callback) = outcome(&head(target));
        let reason = callback.expect("ends the consent").expect_err("refused");
        assert!(!reason.contains('<'), "{reason}");
        assert!(page.contains("did not complete") && !page.contains("script"), "{page}");
    }
}

#[test]
fn the_environment_overrides_only_the_endpoints() {
    assert_eq!(Config::from_env(|_| None), Config::default());
    assert_eq!(Config::default().ports, [8765, 8766, 8767]);
    let vars = HashMap::from([
        (AUTHORIZE_URL_VARIABLE, "http://127.0.0.1:1/auth"),
        (TOKEN_URL_VARIABLE, " "),
    ]);
    let config = Config::from_env(|name| vars.get(name).map(|value| (*value).to_owned()));
    assert_eq!(config.authorize_url, "http://127.0.0.1:1/auth");
    assert_eq!(config.token_url, TOKEN_URL);
    assert_eq!(config.ports, CONSENT_PORTS);
}

#[test]
fn pkce_values_are_long_random_and_unreserved() {
    let verifier = random_token(3);
    assert_eq!(verifier.len(), 64);
    assert!(
        verifier
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );
    assert_ne!(verifier, random_token(3));
    assert_eq!(random_token(2).len(), 43);
}
