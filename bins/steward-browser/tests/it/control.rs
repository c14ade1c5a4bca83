//! The control plane over a real hosted browser: a task's browser opens for a profile's
//! origins, navigates within them (nowhere else), reads the page as a snapshot, and acts on one
//! element at a time (type, select, click, submit), refusing an element whose label changed.

use serde_json::{Value, json};

use crate::support::{Fixture, SHOP, element};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_browser_reads_and_acts_on_its_profiles_origin_only() {
    let fixture = Fixture::start().await;
    let task = "/control/v1/tasks/task-1";

    // Without the credential, nothing.
    let anonymous = fixture
        .client
        .put(format!("{}{task}", fixture.base))
        .json(&json!({"origins": ["https://shop.example"]}))
        .send()
        .await
        .expect("answer");
    assert_eq!(anonymous.status().as_u16(), 401);
    assert_eq!(fixture.browsers.open_count().await, 0);

    let origins = json!({"origins": [format!("https://{SHOP}")]});
    let (status, _) = fixture.call(reqwest::Method::PUT, task, Some(origins.clone())).await;
    assert_eq!(status, 201);
    let (status, _) = fixture.call(reqwest::Method::PUT, task, Some(origins)).await;
    assert_eq!(status, 200, "already open with the same origins");
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            task,
            Some(json!({"origins": ["https://other.example"]})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (409, Some("browser.task_conflict")));

    // Navigation stays on the profile's origins: not another site, not the account list, not
    // plain HTTP.
    for elsewhere in [
        "https://elsewhere.example/",
        "https://accounts.google.com/",
        "http://shop.example/",
        "https://shop.example:8443/",
    ] {
        let (status, problem) = fixture
            .call(
                reqwest::Method::POST,
                &format!("{task}/navigate"),
                Some(json!({"url": elsewhere})),
            )
            .await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (422, Some("browser.origin_not_allowed")),
            "{elsewhere}: {problem}"
        );
    }

    let (status, page) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/navigate"),
            Some(json!({"url": "https://shop.example/"})),
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["title"], "The shop");
    assert_eq!(page["url"], "https://shop.example/");
    assert!(page["text"].as_str().is_some_and(|text| text.contains("Tea")), "{page}");
    let name = element(&page, "Your name").to_owned();
    let size = element(&page, "Size").to_owned();
    let order = element(&page, "Place order").to_owned();
    // Each element says where it leads and what its form's buttons say; kinds come from a fixed
    // list.
    let described = page["elements"]
        .as_array()
        .and_then(|elements| elements.iter().find(|entry| entry["ref"] == order.as_str()))
        .expect("the order button");
    assert_eq!(described["target"], "https://shop.example/order");
    assert_eq!(described["form"], "Place order");
    assert_eq!(described["kind"], "button");

    // An element whose label is not the one named is refused, and nothing happens; so is one
    // with the right words that leads elsewhere (another row's button in a changed list).
    let act = |element: &str, label: &str, action: Value| json!({"element": element, "label": label, "action": action});
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&order, "Cancel order", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("browser.page_changed")),
        "{problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(
                json!({"element": order, "label": "Place order", "target": "https://shop.example/cancel",
                "action": {"kind": "click"}}),
            ),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("browser.page_changed")),
        "{problem}"
    );
    assert!(
        !problem.to_string().contains("Place order"),
        "a refusal repeats no website text: {problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act("e99", "Place order", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("browser.no_element")),
        "{problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&size, "Size", json!({"kind": "select", "value": "huge"}))),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.unsupported_action")),
        "{problem}"
    );
    assert!(fixture.orders.lock().expect("orders").is_empty());

    // Type, select, submit: the site receives exactly that order.
    let (status, _) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&name, "Your name", json!({"kind": "type", "text": "Ada"}))),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&size, "Size", json!({"kind": "select", "value": "large"}))),
        )
        .await;
    assert_eq!(status, 200);
    let (status, after) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&order, "Place order", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["title"], "Ordered", "{after}");
    assert_eq!(
        *fixture.orders.lock().expect("orders"),
        vec![vec![
            ("name".to_owned(), "Ada".to_owned()),
            ("size".to_owned(), "large".to_owned())
        ]]
    );

    // Reading needs no action; a link is followed by a click.
    let (status, page) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/navigate"),
            Some(json!({"url": "https://shop.example/"})),
        )
        .await;
    assert_eq!(status, 200);
    let about = element(&page, "About us").to_owned();
    let (_, after) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&about, "About us", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(after["title"], "About", "{after}");
    let (status, read) = fixture.call(reqwest::Method::GET, &format!("{task}/page"), None).await;
    assert_eq!(
        (status, read["url"].as_str()),
        (200, Some("https://shop.example/about"))
    );

    // A browser used just now is not idle; one idle for the whole limit is closed.
    assert_eq!(fixture.browsers.close_idle(std::time::Duration::from_secs(60)).await, 0);
    assert_eq!(fixture.browsers.open_count().await, 1);
    let idle = "/control/v1/tasks/task-idle";
    let (status, _) = fixture
        .call(
            reqwest::Method::PUT,
            idle,
            Some(json!({"origins": [format!("https://{SHOP}")]})),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(fixture.browsers.close_idle(std::time::Duration::ZERO).await, 2);
    let (status, problem) = fixture.call(reqwest::Method::GET, &format!("{idle}/page"), None).await;
    assert_eq!((status, problem["code"].as_str()), (404, Some("browser.no_task")));
    let (status, _) = fixture
        .call(
            reqwest::Method::PUT,
            task,
            Some(json!({"origins": [format!("https://{SHOP}")]})),
        )
        .await;
    assert_eq!(status, 201, "a closed task opens again");

    // Closing ends the browser; the task is gone.
    let (status, _) = fixture.call(reqwest::Method::DELETE, task, None).await;
    assert_eq!(status, 204);
    assert_eq!(fixture.browsers.open_count().await, 0);
    let (status, problem) = fixture.call(reqwest::Method::GET, &format!("{task}/page"), None).await;
    assert_eq!((status, problem["code"].as_str()), (404, Some("browser.no_task")));
    let (status, _) = fixture.call(reqwest::Method::DELETE, task, None).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_problems() {
    let fixture = Fixture::start().await;
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/task-2",
            Some(json!({"origins": ["http://shop.example"]})),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.origin_not_allowed")),
        "{problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/task-2",
            Some(json!({"origins": []})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/a%20b",
            Some(json!({"origins": ["https://shop.example"]})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/task-2",
            Some(json!({"origin": "x"})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));
    assert_eq!(fixture.browsers.open_count().await, 0);
}
