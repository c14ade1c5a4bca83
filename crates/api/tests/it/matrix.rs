//! Route × credential × flag matrix: every mounted route answers 401 without a token, 403 without
//! its scope, and 404 (before authentication) when its flag is off. The web session credential
//! is checked across the catalog in `web_session.rs`.

use api::routes::{Access, RouteDef, catalog};
use domain::flags::Flag;
use domain::scope::Scope;
use reqwest::Method;

use crate::support::{Env, TestApp, all_scopes, expect_problem};

/// The route's path with every `{parameter}` replaced by a fresh id.
pub(crate) fn sample_path(route: &RouteDef) -> String {
    let mut path = route.path.to_owned();
    while let (Some(start), Some(end)) = (path.find('{'), path.find('}')) {
        path.replace_range(start..=end, &uuid::Uuid::new_v4().to_string());
    }
    path
}

pub(crate) fn every_flag_used() -> Env {
    let mut env = Env::default();
    // A flag this release refuses in an environment, or one whose configuration is a client of
    // another role, is turned on by `spawn_every_flag`.
    for flag in catalog()
        .iter()
        .filter_map(|route| route.flag)
        .filter(|flag| !configured_in_code(*flag))
    {
        env = env.set(flag.variable(), "1");
    }
    // The two notification flags always hold the same value.
    if env.0.contains_key(Flag::NotificationApi.variable()) {
        env = env.set(Flag::NotificationDispatch.variable(), "1");
    }
    // Unsubscribe assistance needs the mail accounts.
    if env.0.contains_key(Flag::EmailUnsubscribe.variable()) {
        env = env.with_mail();
    }
    env
}

/// A flag this release refuses in an environment, or Website Access (its environment names the
/// browser role and a credential file; here its client is made in code).
fn configured_in_code(flag: Flag) -> bool {
    flag == Flag::Browser
        || domain::flags::UNSUPPORTED
            .iter()
            .any(|(variable, _)| *variable == flag.variable())
}

/// An app on `env` (from [`every_flag_used`]) with the flags it leaves out turned on as well;
/// Website Access's browser role is somewhere nothing listens.
pub(crate) async fn spawn_every_flag(env: Env) -> TestApp {
    TestApp::spawn_configured(env, |config| {
        let mut on: Vec<Flag> = config.flags.enabled().collect();
        on.extend(
            catalog()
                .iter()
                .filter_map(|route| route.flag)
                .filter(|flag| configured_in_code(*flag)),
        );
        config.flags = domain::flags::FeatureFlags::with(&on).expect("flags");
        config.browser = Some(
            api::browser_access::BrowserAccess::new(
                url::Url::parse("http://127.0.0.1:9/").expect("a url"),
                "a-control-plane-credential-nothing-uses".to_owned(),
                url::Url::parse("https://browser.example/").expect("a url"),
            )
            .expect("a client"),
        );
    })
    .await
}

fn scopes_without(scope: Scope) -> String {
    Scope::ALL
        .iter()
        .filter(|s| **s != scope)
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

async fn probe(app: &TestApp, method: &Method, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = app.client.request(method.clone(), app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("send")
}

/// Checks every route against an app whose flags are `flags_on` (true: every catalog flag on).
async fn check(flags_on: bool) {
    let env = if flags_on { every_flag_used() } else { Env::default() };
    let spawn = |env: Env| async move {
        if flags_on {
            spawn_every_flag(env).await
        } else {
            TestApp::spawn_with(env).await
        }
    };
    let app = spawn(env.clone()).await;
    // One app per required scope, granted every scope but that one.
    let mut limited_apps = std::collections::HashMap::new();
    for route in catalog() {
        if let Access::Scoped(scope) = route.access
            && !limited_apps.contains_key(&scope)
        {
            let limited = spawn(env.clone().set("AUTH_SCOPES", &scopes_without(scope))).await;
            limited_apps.insert(scope, limited);
        }
    }
    for route in catalog() {
        let path = sample_path(&route);
        let mounted = route.flag.is_none() || flags_on;
        let label = format!("{route:?} (flags on: {flags_on})");
        if !mounted {
            expect_problem(probe(&app, &route.method, &path, None).await, 404, "not_found").await;
            expect_problem(
                probe(&app, &route.method, &path, Some(&app.token)).await,
                404,
                "not_found",
            )
            .await;
            continue;
        }
        match route.access {
            Access::Public => {
                let response = probe(&app, &route.method, &path, None).await;
                assert_eq!(response.status(), 200, "{label}: public routes need no token");
            }
            access => {
                let missing = probe(&app, &route.method, &path, None).await;
                let challenge = missing
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                assert!(
                    challenge.as_deref().is_some_and(|c| c.starts_with("Bearer")),
                    "{label}: {challenge:?}"
                );
                expect_problem(missing, 401, "unauthenticated").await;

                let wrong = probe(
                    &app,
                    &route.method,
                    &path,
                    Some("not-the-token-but-long-enough-0123456789"),
                )
                .await;
                assert!(wrong.headers().contains_key("www-authenticate"), "{label}");
                expect_problem(wrong, 401, "unauthenticated").await;

                if let Access::Scoped(scope) = access {
                    let limited = &limited_apps[&scope];
                    let forbidden = probe(limited, &route.method, &path, Some(&limited.token)).await;
                    let body = expect_problem(forbidden, 403, "insufficient_scope").await;
                    assert_eq!(body["required_scope"], scope.as_str(), "{label}");
                }

                // With every scope the route is reached: whatever it answers, it is not the
                // router's or the guard's refusal.
                let allowed = probe(&app, &route.method, &path, Some(&app.token)).await;
                let status = allowed.status().as_u16();
                let text = allowed.text().await.expect("body");
                for refusal in [
                    "\"unauthenticated\"",
                    "\"insufficient_scope\"",
                    "\"not_found\"",
                    "\"method_not_allowed\"",
                ] {
                    assert!(!text.contains(refusal), "{label}: answered {status} {text}");
                }
            }
        }
    }
}

#[tokio::test]
async fn routes_with_flags_off() {
    check(false).await;
}

#[tokio::test]
async fn routes_with_flags_on() {
    check(true).await;
}

#[tokio::test]
async fn the_memory_routes_are_gone_while_their_flag_is_off() {
    // Memory's and People's routes answer only with AGENT_MEMORY_API_ENABLED on.
    let app = TestApp::spawn().await;
    for path in [
        "/v1/memories",
        &format!("/v1/runs/{}/memories", uuid::Uuid::new_v4()),
        "/v1/people",
        "/v1/people/duplicates",
    ] {
        expect_problem(
            probe(&app, &Method::GET, path, Some(&app.token)).await,
            404,
            "not_found",
        )
        .await;
    }
    assert!(
        catalog()
            .iter()
            .filter(|route| route.path.contains("memor") || route.path.starts_with("/v1/people"))
            .all(|route| route.flag == Some(Flag::MemoryApi))
    );
}

#[tokio::test]
async fn unknown_paths_and_methods_are_problems() {
    let app = TestApp::spawn().await;
    expect_problem(
        probe(&app, &Method::GET, "/v1/nothing-here", None).await,
        404,
        "not_found",
    )
    .await;
    expect_problem(
        probe(&app, &Method::PUT, "/v1/sessions", Some(&app.token)).await,
        405,
        "method_not_allowed",
    )
    .await;
    // Scope grants are exact: the token of this app holds them all.
    assert!(all_scopes().contains("sessions.write"));
}

#[test]
fn the_api_template_grants_every_scope_a_built_route_needs() {
    // `cargo xtask dev` grants the template's scopes too, so both follow the catalog.
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../systemd/env/api.env"))
        .expect("read systemd/env/api.env");
    let granted: Vec<&str> = template
        .lines()
        .find_map(|line| line.strip_prefix("AUTH_SCOPES="))
        .expect("an AUTH_SCOPES line")
        .split(',')
        .collect();
    for route in catalog() {
        if let Access::Scoped(scope) = route.access {
            assert!(granted.contains(&scope.as_str()), "{route:?} needs {}", scope.as_str());
        }
    }
    for scope in &granted {
        let needed = catalog()
            .iter()
            .any(|route| matches!(route.access, Access::Scoped(needed) if needed.as_str() == *scope));
        assert!(needed, "the template grants `{scope}`, which no built route needs");
    }
}
