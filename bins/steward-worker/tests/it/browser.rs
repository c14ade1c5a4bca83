//! `browser.act` through the real API and worker with the scripted model, acting in a real
//! headed Chromium (under Xvfb) hosted by the browser role's control plane, on the test's tea
//! shop behind TLS, with the profile's sealed session. Reads need no approval; every change
//! waits for one that names the action, the element and the page and marks the website's words;
//! `Allow all actions for this task` grants a task permission that covers later changes until
//! it runs out by count or by time, never covers an exception (a purchase), and stops at once.

use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use domain::flags::{FeatureFlags, Flag};
use serde_json::{Value, json};
use steward_browser::ceremony::{Ceremonies, system_clock};
use steward_browser::chromium::CHROMIUM;
use steward_browser::control::{Control, router};
use steward_browser::display::VirtualDisplay;
use steward_browser::proxy::Upstream;
use steward_browser::storage::{SiteData, Vault};
use steward_browser::tasks::{Browsers, Template};
use testkit::shop::{SESSION, SHOP, Shop};

use crate::support::{Stack, json as answer};

const CREDENTIAL: &str = "a-control-plane-credential-for-the-worker-tests";
const PROFILE: &str = "0193a1b2-0000-7000-8000-00000000b10e";

/// The browser role (in this process), the shop, and a stack whose worker acts through it.
struct World {
    stack: Stack,
    shop: Shop,
    session: String,
    _role: (VirtualDisplay, testkit::Served, tempfile::TempDir),
}

async fn world(max_actions: u32) -> World {
    let shop = Shop::start().await;
    let display = tokio::task::spawn_blocking(|| VirtualDisplay::start(std::path::Path::new("/usr/bin/Xvfb")))
        .await
        .expect("join")
        .expect("Xvfb");
    let dir = tempfile::tempdir().expect("a directory");
    let vault = Arc::new(Vault::new(&[5; 32], dir.path().join("sealed")));
    std::fs::create_dir(vault.directory()).expect("the vault's directory");
    // The profile's session, as a ceremony would have sealed it.
    let session: SiteData = serde_json::from_value(json!({"cookies": [
        {"name": "sid", "value": SESSION, "domain": SHOP, "path": "/", "secure": true, "http_only": true}
    ]}))
    .expect("a session");
    vault.seal(PROFILE, &session).expect("seal");
    let root = std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0;
    let browsers = Arc::new(Browsers::new(
        Template {
            executable: PathBuf::from(CHROMIUM),
            display: display.name().to_owned(),
            sandbox: !root,
            local_site_keys: vec![shop.spki_sha256.clone()],
            upstream: Upstream::Local(shop.front),
            data_root: dir.path().to_owned(),
        },
        Arc::clone(&vault),
    ));
    let control = testkit::serve(router(Arc::new(Control::new(
        browsers,
        Arc::new(Ceremonies::new(system_clock())),
        CREDENTIAL.as_bytes(),
    ))))
    .await;

    let mut stack = Stack::configured(
        &[("AUTH_SCOPES", "sessions.read,sessions.write,browser.read,browser.write")],
        |config| {
            config.flags = FeatureFlags::with(&[Flag::Browser]).expect("flags");
            config.agents = domain::agent::AgentRegistry::compose(
                vec![domain::agent::AgentDefinition::builtin_default()],
                &config.flags,
                None,
            )
            .expect("agents");
        },
    )
    .await;
    let owner = domain::ids::PrincipalId::owner();
    sqlx::query(
        "INSERT INTO browser_profiles (id, principal_id, origins, state, ready_at)
         VALUES ($1::uuid, $2, ARRAY['https://shop.example'], 'ready', now())",
    )
    .bind(PROFILE)
    .bind(owner.as_str())
    .execute(&stack.db.pool)
    .await
    .expect("a ready profile");
    let mut tools = agent::browser_tools::BrowserTools::new(
        url::Url::parse(&control.url("")).expect("a url"),
        CREDENTIAL.to_owned(),
    )
    .expect("the control plane's client");
    tools.limits.max_actions = max_actions;
    stack.browser = Some(Arc::new(tools));
    stack.start_worker(&[]).await;
    let (status, created) = answer(
        stack
            .request(reqwest::Method::POST, "/v1/sessions")
            .json(&json!({"agent_id": "default", "browser_profile_id": PROFILE}))
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["browser_profile_id"], PROFILE);
    let session = created["session_id"].as_str().expect("id").to_owned();
    World {
        stack,
        shop,
        session,
        _role: (display, control, dir),
    }
}

/// The reference of the element labelled `label` in the last page a tool result showed.
fn reference(results: &[Value], label: &str) -> String {
    let page = results
        .iter()
        .rev()
        .find_map(|result| result["result"]["untrusted_website_content"].as_str())
        .expect("a page was read");
    page.lines()
        .find_map(|line| {
            let (reference, rest) = line.split_once(' ')?;
            (reference.starts_with('e') && rest.ends_with(&format!("] {label}"))).then(|| reference.to_owned())
        })
        .unwrap_or_else(|| panic!("no element `{label}` in {page}"))
}

/// Answers the question the run waits on.
async fn answer_question(stack: &Stack, session: &str, run: &str) {
    let question = stack
        .events(session)
        .await
        .into_iter()
        .rev()
        .find(|(kind, _)| kind == "question.asked")
        .and_then(|(_, payload)| payload["question_id"].as_str().map(str::to_owned))
        .expect("a question");
    let answered = stack
        .request(reqwest::Method::POST, &format!("/v1/runs/{run}/input"))
        .json(&json!({"question_id": question, "text": "yes"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(answered.status(), 200);
}

fn act(arguments: Value) -> String {
    format!("/tool browser.act {arguments}")
}

async fn pending_one(stack: &Stack, session: &str) -> Value {
    let pending = stack.pending_approvals(session).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    pending.into_iter().next().expect("one")
}

async fn task_permissions(stack: &Stack) -> Vec<Value> {
    stack.get("/v1/browser/task-permissions").await["task_permissions"]
        .as_array()
        .expect("a list")
        .clone()
}

#[tokio::test]
async fn reads_run_at_once_changes_wait_for_approval_and_a_task_permission_never_covers_a_purchase() {
    let World {
        stack,
        shop,
        session,
        _role,
    } = world(20).await;

    // Reading needs no approval, and the browser carries the profile's session.
    let home = json!({"action": "navigate", "url": "https://shop.example/"});
    let run = stack
        .submit(
            &session,
            &format!(
                "{}\n{}",
                act(json!({"action": "navigate", "url": "https://shop.example/account"})),
                act(home.clone())
            ),
        )
        .await;
    stack.completes(&run).await;
    let results = stack.tool_results(&session).await;
    assert!(results[0].to_string().contains("Signed in as Ada"), "{}", results[0]);
    assert!(
        results[1].to_string().contains("<untrusted_website boundary="),
        "the website's words reach the model marked: {}",
        results[1]
    );
    let name = reference(&results, "Your name");
    let size = reference(&results, "Size");
    let order = reference(&results, "Place order");
    assert!(stack.pending_approvals(&session).await.is_empty());

    // Typing waits for an approval naming the action, the element and the page, the website's
    // words marked as such, and offering a task permission.
    let run = stack
        .submit(
            &session,
            &[
                act(home.clone()),
                act(json!({"action": "type", "element": name, "text": "Ada"})),
                act(json!({"action": "select", "element": size, "value": "large"})),
                act(json!({"action": "click", "element": order})),
            ]
            .join("\n"),
        )
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let typing = pending_one(&stack, &session).await;
    assert_eq!(typing["tool"], "browser.act");
    let shown = &typing["arguments"];
    assert_eq!(
        (
            shown["action"].as_str(),
            shown["element"].as_str(),
            shown["text"].as_str()
        ),
        (Some("type"), Some(name.as_str()), Some("Ada"))
    );
    assert_eq!(shown["page_url"], "https://shop.example/");
    assert_eq!(shown["website_text"]["element_label"], "Your name");
    assert_eq!(shown["website_text"]["page_title"], "The shop");
    assert!(shown.get("exception").is_none(), "{shown}");
    let offer = &typing["task_offer"];
    assert_eq!(offer["origins"], json!(["https://shop.example"]));
    assert_eq!(
        (offer["max_actions"].as_u64(), offer["minutes"].as_u64()),
        (Some(20), Some(15))
    );
    assert_eq!(offer["exceptions"], json!(["purchase", "sign_out"]));

    // Allowed for the task: the selection after it needs no approval; the order (a purchase)
    // does, with no offer, although the permission is in force.
    stack.decide_ok(&typing, "allow_for_task").await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let purchase = pending_one(&stack, &session).await;
    assert_eq!(purchase["arguments"]["website_text"]["element_label"], "Place order");
    assert_eq!(purchase["arguments"]["exception"], "purchase");
    assert_eq!(
        purchase["arguments"]["website_text"]["element_target"], "https://shop.example/order",
        "where the click leads is shown and checked"
    );
    assert!(purchase.get("task_offer").is_none_or(Value::is_null), "{purchase}");
    let active = task_permissions(&stack).await;
    assert_eq!(active.len(), 1, "{active:?}");
    assert_eq!(
        (
            active[0]["actions_used"].as_u64(),
            active[0]["remaining_actions"].as_u64()
        ),
        (Some(2), Some(18)),
        "the typing and the covered selection"
    );
    let (status, refused) = answer(
        stack
            .decide(purchase["approval_id"].as_str().expect("id"), "allow_for_task")
            .await,
    )
    .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("task_permission_not_offered"))
    );
    assert!(
        shop.orders.lock().expect("orders").is_empty(),
        "nothing ordered before approval"
    );
    stack.decide_ok(&purchase, "approve_once").await;
    stack.completes(&run).await;
    let orders = shop.orders.lock().expect("orders").clone();
    assert_eq!(
        orders,
        vec![vec![
            ("name".to_owned(), "Ada".to_owned()),
            ("size".to_owned(), "large".to_owned())
        ]]
    );

    // The covered selection shows as approved for the task; the typing as allowed for the
    // task by its own decision; the purchase as approved once.
    let approvals: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT arguments->>'action', approved_for FROM approvals WHERE session_id = $1::uuid ORDER BY created_at",
    )
    .bind(&session)
    .fetch_all(&stack.db.pool)
    .await
    .expect("approvals");
    let approvals: Vec<(&str, Option<&str>)> = approvals
        .iter()
        .map(|(action, approved)| (action.as_str(), approved.as_deref()))
        .collect();
    assert_eq!(
        approvals,
        vec![
            ("type", Some("task")),
            ("select", Some("task")),
            ("click", Some("once"))
        ]
    );
    assert!(
        task_permissions(&stack).await.is_empty(),
        "a permission ends with its run"
    );

    // Opening a sign-out address is not a read: it asks, as an exception, with no offer.
    let run = stack
        .submit(
            &session,
            &act(json!({"action": "navigate", "url": "https://shop.example/account/logout"})),
        )
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let leaving = pending_one(&stack, &session).await;
    assert_eq!(leaving["arguments"]["exception"], "sign_out");
    assert!(leaving.get("task_offer").is_none_or(Value::is_null), "{leaving}");
    stack.decide_ok(&leaving, "deny").await;
    stack.completes(&run).await;
}

#[tokio::test]
async fn a_task_permission_runs_out_by_count_and_by_time_and_stops_at_once() {
    let World {
        mut stack,
        shop: _shop,
        session,
        _role,
    } = world(2).await;
    let home = json!({"action": "navigate", "url": "https://shop.example/"});
    let run = stack.submit(&session, &act(home.clone())).await;
    stack.completes(&run).await;
    let name = reference(&stack.tool_results(&session).await, "Your name");
    let typing = |text: &str| act(json!({"action": "type", "element": name, "text": text}));
    let ask = "/tool owner.ask {\"question\": \"Go on?\"}";
    let run = stack
        .submit(
            &session,
            &[
                act(home.clone()),
                typing("A"),
                typing("B"),
                typing("C"),
                ask.to_owned(),
                typing("D"),
                ask.to_owned(),
                typing("E"),
            ]
            .join("\n"),
        )
        .await;

    // A allowed for the task (1 of 2), B covered (2 of 2), C asks again: the count ran out.
    stack.wait_for(&run, &["waiting_approval"]).await;
    let first = pending_one(&stack, &session).await;
    assert_eq!(first["arguments"]["text"], "A");
    stack.decide_ok(&first, "allow_for_task").await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let third = pending_one(&stack, &session).await;
    assert_eq!(third["arguments"]["text"], "C", "B was covered; C is past the count");
    assert!(third["task_offer"].is_object());

    // Allowed for the task again; then, while the run asks the owner, the permission's time
    // passes: D asks again.
    stack.decide_ok(&third, "allow_for_task").await;
    stack.wait_for(&run, &["waiting_input"]).await;
    assert_eq!(task_permissions(&stack).await.len(), 1);
    stack.clock.advance(jiff::SignedDuration::from_mins(16));
    assert!(task_permissions(&stack).await.is_empty(), "expired");
    answer_question(&stack, &session, &run).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let fourth = pending_one(&stack, &session).await;
    assert_eq!(fourth["arguments"]["text"], "D", "the permission's time ran out");

    // Allowed for the task, then stopped while the action has not started (no worker runs):
    // it is not made, and the run goes on.
    stack.stop_workers();
    stack.decide_ok(&fourth, "allow_for_task").await;
    let active = task_permissions(&stack).await;
    assert_eq!(active.len(), 1, "{active:?}");
    let permission = active[0]["task_permission_id"].as_str().expect("id").to_owned();
    let (status, stopped) = answer(
        stack
            .request(
                reqwest::Method::POST,
                &format!("/v1/browser/task-permissions/{permission}/stop"),
            )
            .send()
            .await
            .expect("stop"),
    )
    .await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(
        (stopped["active"].as_bool(), stopped["remaining_actions"].as_u64()),
        (Some(false), Some(0))
    );
    assert!(task_permissions(&stack).await.is_empty());
    stack.start_worker(&[]).await;
    stack.wait_for(&run, &["waiting_input"]).await;
    let results = stack.tool_results(&session).await;
    let refused = results.last().expect("D's result").to_string();
    assert!(refused.contains("browser.task_permission_stopped"), "{refused}");

    // After the stop, E asks again.
    answer_question(&stack, &session, &run).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let fifth = pending_one(&stack, &session).await;
    assert_eq!(fifth["arguments"]["text"], "E");
    stack.decide_ok(&fifth, "deny").await;
    stack.completes(&run).await;
    let unknown = stack
        .request(
            reqwest::Method::POST,
            "/v1/browser/task-permissions/0193a1b2-0000-7000-8000-000000000000/stop",
        )
        .send()
        .await
        .expect("stop");
    assert_eq!(unknown.status(), 404);
}
