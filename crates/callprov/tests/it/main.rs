//! The call-provider client against a stand-in speaking the provider's HTTP API
//! (`testkit::callprov`), and the configuration, key and brief rules around it.

use callprov::client::CallProvError;
use callprov::key::{Endpoint, KeyError};
use callprov::script::{CLEARING_MEMBERS, SettingsMismatch};
use callprov::{Brief, CallConfiguration, Client, dispatch_request};
use serde_json::{Value, json};
use testkit::callprov::{DispatchMode, FakeCallProvider};

const KEY: &str = "cp-test-key-made-for-this-run";
const NUMBER: &str = "+15551230000";

fn configuration() -> CallConfiguration {
    let value = json!({
        "version": 1,
        "account_id": "home",
        "phone_number": NUMBER,
        "public_name": "Alex Rivera",
        "public_profile": "Alex is a carpenter in Portland and takes commissions by email.",
        "voice": "maya",
        "max_duration_minutes": 5,
        "webhook_url": "https://steward.example.org/webhooks/callprov",
    });
    CallConfiguration::parse(value.to_string().as_bytes()).expect("a valid configuration")
}

fn endpoint(dir: &tempfile::TempDir, base_url: &str, key: &str) -> Endpoint {
    let path = dir.path().join("callprov-api-key");
    if !path.exists() {
        testkit::write_private(&path, &format!("{key}\n"));
    }
    let vars = [
        ("CALLPROV_BASE_URL", base_url.to_owned()),
        ("CALLPROV_API_KEY_FILE", path.display().to_string()),
    ];
    Endpoint::from_env(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())).expect("an endpoint")
}

async fn started() -> (FakeCallProvider, Client, tempfile::TempDir) {
    let provider = FakeCallProvider::start(KEY, &[NUMBER]).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let client = Client::new(endpoint(&dir, &provider.url, KEY));
    (provider, client, dir)
}

fn brief(voicemail: Option<&str>) -> Brief {
    let mut value = json!({
        "to": "+15557654321",
        "purpose": "Confirm the delivery window for the oak table.",
        "may_say": "Alex can receive the delivery on Tuesday between 9 and 12.",
    });
    if let Some(message) = voicemail {
        value["voicemail_message"] = json!(message);
    }
    Brief::parse(&value, &configuration()).expect("a valid brief")
}

#[tokio::test]
async fn activation_pushes_the_public_settings_clears_the_rest_and_reads_them_back() {
    let (provider, client, _dir) = started().await;
    let config = configuration();
    let settings = client.activate_number(&config).await.expect("activated");
    let number = provider.number(NUMBER).expect("the number");
    for member in CLEARING_MEMBERS {
        let value = number.get(member).expect("pushed");
        assert!(value.is_null() || value == &json!([]), "{member} cleared: {value}");
    }
    assert_eq!(number["max_duration"], json!(5));
    assert_eq!(
        number["webhook"],
        json!("https://steward.example.org/webhooks/callprov")
    );
    assert_eq!(number["prompt"].as_str(), Some(settings.prompt()));
    let requests = provider.requests();
    assert_eq!(
        requests.iter().map(|r| (r.method, r.path.as_str())).collect::<Vec<_>>(),
        [
            ("POST", "/v1/inbound/+15551230000"),
            ("GET", "/v1/inbound/+15551230000")
        ]
    );
    assert!(requests.iter().all(|r| r.authorization.as_deref() == Some(KEY)));
}

#[tokio::test]
async fn a_provider_that_ignores_a_clearing_member_blocks_activation() {
    let (provider, client, _dir) = started().await;
    provider.ignore_member("tools");
    let error = client.activate_number(&configuration()).await.expect_err("blocked");
    assert!(
        matches!(&error, CallProvError::Settings(SettingsMismatch::NotCleared(member)) if member == "tools"),
        "{error:?}"
    );
    assert!(error.to_string().contains("did not clear `tools`"), "{error}");

    let (provider, client, _dir) = started().await;
    provider.ignore_member("prompt");
    let error = client.activate_number(&configuration()).await.expect_err("blocked");
    assert!(
        matches!(&error, CallProvError::Settings(SettingsMismatch::Differs(member)) if member == "prompt"),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_inbound_prompt_holds_the_public_profile_and_the_honesty_rule_only() {
    let config = configuration();
    let settings = callprov::NumberSettings::for_configuration(&config);
    let prompt = settings.prompt();
    assert!(prompt.contains(&config.public_profile));
    assert!(prompt.contains("You are Steward, answering the phone for Alex Rivera"));
    assert!(prompt.contains("Do not say on your own that you are an AI or that the call is transcribed"));
    assert!(prompt.contains("say truthfully that you are Steward, an AI assistant"));
    assert!(prompt.contains("say truthfully that it is transcribed for Alex Rivera"));
    let greeting = settings.body["first_sentence"].as_str().expect("a greeting");
    assert_eq!(
        greeting,
        "Hello, you've reached Alex Rivera. This is Steward, how can I help?"
    );
    for word in ["AI", "transcri", "record"] {
        assert!(!greeting.contains(word), "the greeting announces nothing: {greeting}");
    }
}

#[tokio::test]
async fn a_dispatch_is_accepted_once_with_the_brief_the_limit_and_a_reference() {
    let (provider, client, _dir) = started().await;
    let config = configuration();
    let request = dispatch_request(
        &brief(Some(
            "Hi, this is Steward for Alex Rivera about the oak table; please call back.",
        )),
        &config,
        "ref-1",
    );
    let dispatch = client.dispatch(&request).await.expect("accepted");
    let calls = provider.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["call_id"], json!(dispatch.call_id));
    let sent = &provider.requests()[0].body;
    assert_eq!(sent["phone_number"], json!("+15557654321"));
    assert_eq!(sent["max_duration"], json!(5));
    assert_eq!(sent["metadata"]["steward_call"], json!("ref-1"));
    assert_eq!(sent["voicemail"]["action"], json!("leave_message"));
    let task = sent["task"].as_str().expect("a task");
    assert!(task.contains("Alex can receive the delivery on Tuesday between 9 and 12."));
    assert!(task.contains("calling on behalf of Alex Rivera"));
    assert!(task.contains("say truthfully that you are Steward, an AI assistant"));

    let hang_up = dispatch_request(&brief(None), &config, "ref-2");
    assert_eq!(hang_up["voicemail"], json!({ "action": "hangup" }));
    assert!(
        hang_up["task"]
            .as_str()
            .is_some_and(|task| task.contains("hang up without leaving a message"))
    );
}

#[tokio::test]
async fn a_lost_answer_is_uncertain_and_history_finds_the_call_by_its_reference() {
    let (provider, client, _dir) = started().await;
    provider.set_dispatch(DispatchMode::PlaceThenFail);
    let request = dispatch_request(&brief(None), &configuration(), "ref-lost");
    let error = client.dispatch(&request).await.expect_err("uncertain");
    assert!(matches!(error, CallProvError::Uncertain(_)), "{error:?}");
    let history = client.history("+15557654321", "2020-01-01").await.expect("history");
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].reference(), Some("ref-lost"));
    assert_eq!(
        history[0].call_id,
        provider.calls()[0]["call_id"].as_str().expect("an id")
    );
    assert!(
        client
            .history("+15550000000", "2020-01-01")
            .await
            .expect("history")
            .is_empty()
    );

    provider.set_dispatch(DispatchMode::Refuse);
    let error = client.dispatch(&request).await.expect_err("refused");
    assert!(matches!(error, CallProvError::Refused { status: 400, .. }), "{error:?}");
    assert_eq!(provider.calls().len(), 1, "a refused dispatch placed nothing");
}

#[tokio::test]
async fn a_call_reads_with_its_transcript_and_stops() {
    let (provider, client, _dir) = started().await;
    let call_id = provider.inbound_call(
        "+15559990000",
        NUMBER,
        &[("assistant", "Hello"), ("user", "Hi, it's Sam")],
        "Sam called.",
    );
    let detail = client.call(&call_id).await.expect("the call");
    assert!(detail.inbound && detail.completed);
    assert_eq!(detail.transcripts.len(), 2);
    assert_eq!(detail.transcripts[1].text, "Hi, it's Sam");
    assert_eq!(detail.summary.as_deref(), Some("Sam called."));

    let dispatched = client
        .dispatch(&dispatch_request(&brief(None), &configuration(), "r"))
        .await
        .expect("accepted");
    provider.answer(&dispatched.call_id);
    client.stop(&dispatched.call_id).await.expect("stopped");
    assert!(client.call(&dispatched.call_id).await.expect("the call").completed);
    let error = client.call("call-unknown").await.expect_err("unknown");
    assert!(matches!(error, CallProvError::Refused { status: 404, .. }), "{error:?}");
}

#[tokio::test]
async fn a_wrong_key_is_refused_and_the_key_never_shows() {
    let provider = FakeCallProvider::start(KEY, &[NUMBER]).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let endpoint = endpoint(&dir, &provider.url, "another-key");
    assert!(!format!("{endpoint:?}").contains("another-key"));
    let error = Client::new(endpoint).call("call-1").await.expect_err("refused");
    assert!(matches!(error, CallProvError::Refused { status: 401, .. }), "{error:?}");
    assert!(!error.to_string().contains("another-key"));
    assert!(
        !error.to_string().contains("invalid api key"),
        "the provider's words (which may echo a number) stay out of the message: {error}"
    );
}

#[test]
fn the_endpoint_refuses_inline_keys_plain_http_and_missing_files() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let key = dir.path().join("key");
    testkit::write_private(&key, "k-1\n");
    let key = key.display().to_string();
    let read = |vars: &[(&str, &str)]| {
        Endpoint::from_env(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    };
    let inline = read(&[
        ("CALLPROV_API_KEY", "k"),
        ("CALLPROV_BASE_URL", "https://p.example"),
        ("CALLPROV_API_KEY_FILE", &key),
    ]);
    assert!(
        matches!(
            inline,
            Err(KeyError::Invalid {
                variable: "CALLPROV_API_KEY",
                ..
            })
        ),
        "{inline:?}"
    );
    let userinfo = read(&[
        ("CALLPROV_BASE_URL", "http://localhost:1@evil.example/"),
        ("CALLPROV_API_KEY_FILE", &key),
    ]);
    assert!(
        matches!(
            userinfo,
            Err(KeyError::Invalid {
                variable: "CALLPROV_BASE_URL",
                ..
            })
        ),
        "{userinfo:?}"
    );
    let plain = read(&[
        ("CALLPROV_BASE_URL", "http://p.example"),
        ("CALLPROV_API_KEY_FILE", &key),
    ]);
    assert!(
        matches!(
            plain,
            Err(KeyError::Invalid {
                variable: "CALLPROV_BASE_URL",
                ..
            })
        ),
        "{plain:?}"
    );
    let missing = read(&[("CALLPROV_BASE_URL", "https://p.example")]);
    assert!(
        matches!(missing, Err(KeyError::Missing("CALLPROV_API_KEY_FILE"))),
        "{missing:?}"
    );
    let unreadable = read(&[
        ("CALLPROV_BASE_URL", "https://p.example"),
        ("CALLPROV_API_KEY_FILE", "/nonexistent/key"),
    ]);
    assert!(matches!(unreadable, Err(KeyError::File(_))), "{unreadable:?}");
    let loopback = read(&[
        ("CALLPROV_BASE_URL", "http://127.0.0.1:9/"),
        ("CALLPROV_API_KEY_FILE", &key),
    ])
    .expect("loopback");
    assert_eq!(loopback.base_url, "http://127.0.0.1:9");
}

#[test]
fn a_brief_is_closed_bounded_and_never_calls_the_public_number() {
    let config = configuration();
    let good = json!({ "to": "+15557654321", "purpose": "p", "may_say": "m" });
    assert!(Brief::parse(&good, &config).is_ok());
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "to": "+15557654321", "purpose": "p", "may_say": "m", "extra": 1 }),
            "extra",
        ),
        (json!({ "to": "5557654321", "purpose": "p", "may_say": "m" }), "to"),
        (json!({ "to": NUMBER, "purpose": "p", "may_say": "m" }), "public number"),
        (
            json!({ "to": "+15557654321", "purpose": " ", "may_say": "m" }),
            "purpose",
        ),
        (
            json!({ "to": "+15557654321", "purpose": "p", "may_say": "m".repeat(2001) }),
            "may_say",
        ),
        (
            json!({ "to": "+15557654321", "purpose": "p", "may_say": "m", "voicemail_message": "" }),
            "voicemail_message",
        ),
        (json!({ "to": "+15557654321", "purpose": "p" }), "may_say"),
    ];
    for (value, needle) in cases {
        let error = Brief::parse(&value, &config).expect_err(needle).to_string();
        assert!(error.contains(needle), "{needle}: {error}");
    }
}
