//! People's routes (mounted with `AGENT_MEMORY_API_ENABLED`, turned on in code) over records gathered from mail as the async worker
//! gathers them: the listing with its collections and cursors, a profile (names, contacts,
//! facts with evidence, timeline, open threads), the owner's changes and corrections,
//! duplicates with `Merge` and `Not the same` (both remembered by later gatherings), `Repair
//! identity` and `Forget person` (not rebuilt from the same sources).

use domain::flags::{FeatureFlags, Flag};
use domain::ids::PrincipalId;
use reqwest::Method;
use serde_json::{Value, json};
use store::{NewEmailMessage, Store};
use uuid::Uuid;
use wire::email::Correspondent;

use crate::email::{Letter, completed_update, deliver};
use crate::support::{Env, TestApp, expect_problem, json};

async fn app() -> TestApp {
    TestApp::spawn_configured(Env::default(), |config| {
        config.flags = FeatureFlags::with(&[Flag::MemoryApi]).expect("flags");
    })
    .await
}

/// The app, and the store as the async worker with the `personal` account recorded.
async fn app_with_mailbox() -> (TestApp, Store) {
    let app = app().await;
    let store = app.db.store_as("async-worker").await;
    store
        .email()
        .ensure_accounts(&["personal".into()])
        .await
        .expect("accounts");
    (app, store)
}

/// A letter to the owner from `from`, `minute` minutes into the day, assessed important.
async fn letter(store: &Store, id: &str, from: &str, body: &str, minute: i64, reply_need: Option<&str>) {
    let letter = Letter {
        id,
        from,
        subject: &format!("Subject {id}"),
        body,
        minute,
        labels: &["INBOX"],
        importance: Some("important"),
        reply_need,
    };
    deliver(store, "personal", &letter).await;
}

/// A message the owner sent to `to`.
async fn sent(store: &Store, id: &str, to: &str, minute: i64) {
    let owner = Correspondent {
        name: Some("Owner".into()),
        address: "owner@example.org".into(),
    };
    let recipient = Correspondent {
        name: Some("Ada Lovelace".into()),
        address: to.into(),
    };
    store
        .email()
        .record_message(
            &"personal".into(),
            &NewEmailMessage {
                provider_message_id: id,
                provider_thread_id: id,
                sender: Some(&owner),
                recipients: &[recipient],
                copied: &[],
                sent_at: jiff::Timestamp::from_second(1_780_000_000 + 60 * minute).expect("time"),
                subject: "Re: tea",
                body: "I work at the mill.",
                text_cut: false,
                attachments: &[],
                bulk: json!({}),
                labels: &["SENT".to_owned()],
            },
        )
        .await
        .expect("sent");
}

/// Gathers as the async worker does (its login, the offline reader).
async fn gather(store: &Store) -> store::people::Gathered {
    memory::people::gather(store, &PrincipalId::owner(), &memory::people::Offline)
        .await
        .expect("gather")
        .people
}

async fn get(app: &TestApp, path: &str) -> Value {
    let (status, body) = json(app.request(Method::GET, path).send().await.expect("get")).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

async fn send(app: &TestApp, method: Method, path: &str, body: Value) -> (u16, Value) {
    json(app.request(method, path).json(&body).send().await.expect("request")).await
}

fn names(page: &Value) -> Vec<String> {
    page["people"]
        .as_array()
        .expect("people")
        .iter()
        .map(|person| person["name"].as_str().expect("name").to_owned())
        .collect()
}

fn id_named(page: &Value, name: &str) -> Uuid {
    page["people"]
        .as_array()
        .expect("people")
        .iter()
        .find(|person| person["name"] == name)
        .and_then(|person| person["person_id"].as_str())
        .unwrap_or_else(|| panic!("{name} in {page}"))
        .parse()
        .expect("an id")
}

#[tokio::test]
async fn gathered_correspondents_have_profiles_collections_and_pages() {
    let (app, store) = app_with_mailbox().await;
    letter(
        &store,
        "m1",
        "ada@example.com",
        "Hello!\nI work at the observatory.\n--\nAda\nMobile: +44 20 7946 0958",
        0,
        Some("needs_reply"),
    )
    .await;
    letter(&store, "m2", "bob@example.com", "Lunch?", 1, None).await;
    letter(&store, "m3", "noreply@shop.example", "Your order", 2, None).await;
    letter(&store, "m4", "cy@example.com", "Slides attached", 3, None).await;
    completed_update(&store).await;
    sent(&store, "m5", "ada@example.com", 4).await;

    let gathered = gather(&store).await;
    assert_eq!(
        (gathered.messages, gathered.created, gathered.facts),
        (5, 3, 1),
        "{gathered:?}"
    );
    assert_eq!(gather(&store).await.messages, 0, "each message is gathered once");
    // The owner's own words in the mail they sent form a belief, flagged: it came from mail.
    let memories = get(&app, "/v1/memories").await;
    assert_eq!(
        memories["memories"].as_array().expect("memories").len(),
        1,
        "{memories}"
    );
    assert_eq!(
        (
            &memories["memories"][0]["statement"],
            &memories["memories"][0]["origin"],
            &memories["memories"][0]["needs_review"]
        ),
        (&json!("Works at the mill"), &json!("email"), &json!(true))
    );

    let all = get(&app, "/v1/people").await;
    // Newest first; the machine sender and the owner are nobody's record.
    assert_eq!(names(&all), ["Cy", "Bob", "Ada"]);
    assert!(
        all["people"]
            .as_array()
            .expect("people")
            .iter()
            .all(|person| person["needs_review"] == true)
    );
    let ada = id_named(&all, "Ada");

    let page = get(&app, "/v1/people?limit=2").await;
    assert_eq!(names(&page), ["Cy", "Bob"]);
    let cursor = page["next_cursor"].as_str().expect("a cursor");
    let rest = get(&app, &format!("/v1/people?limit=2&cursor={cursor}")).await;
    assert_eq!(names(&rest), ["Ada"]);
    assert!(rest["next_cursor"].is_null());

    let profile = get(&app, &format!("/v1/people/{ada}")).await;
    assert_eq!(profile["names"], json!(["Ada", "Ada Lovelace"]), "{profile}");
    let contacts: Vec<(String, String)> = profile["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .map(|contact| {
            (
                contact["kind"].as_str().expect("kind").to_owned(),
                contact["value"].as_str().expect("value").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        contacts,
        [
            ("email".to_owned(), "ada@example.com".to_owned()),
            ("phone".to_owned(), "+442079460958".to_owned())
        ]
    );
    assert_eq!(profile["facts"][0]["statement"], "Works at the observatory");
    assert_eq!(profile["facts"][0]["source"], "email");
    assert_eq!(profile["facts"][0]["evidence"]["provider_message_id"], "m1");
    assert!(profile["facts"][0]["evidence"]["email_thread_id"].is_string());
    let timeline: Vec<(&str, &str)> = profile["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|entry| {
            (
                entry["provider_message_id"].as_str().expect("id"),
                entry["direction"].as_str().expect("direction"),
            )
        })
        .collect();
    assert_eq!(timeline, [("m5", "to_them"), ("m1", "from_them")]);
    assert_eq!(profile["open_threads"].as_array().expect("open").len(), 1);
    assert_eq!(profile["open_threads"][0]["subject"], "Subject m1");

    // Pin, review, relate; the collections follow.
    let (status, changed) = send(
        &app,
        Method::PATCH,
        &format!("/v1/people/{ada}"),
        json!({"pinned": true, "reviewed": true, "relationship": " friend ", "name": "Ada Lovelace"}),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        (
            &changed["name"],
            &changed["relationship"],
            &changed["pinned"],
            &changed["needs_review"]
        ),
        (&json!("Ada Lovelace"), &json!("friend"), &json!(true), &json!(false))
    );
    assert_eq!(
        names(&get(&app, "/v1/people?collection=pinned").await),
        ["Ada Lovelace"]
    );
    assert_eq!(
        names(&get(&app, "/v1/people?collection=needs_review").await),
        ["Cy", "Bob"]
    );
    let (_, cleared) = send(
        &app,
        Method::PATCH,
        &format!("/v1/people/{ada}"),
        json!({"relationship": null}),
    )
    .await;
    assert!(cleared["relationship"].is_null(), "{cleared}");
    assert_eq!(cleared["pinned"], true, "untouched fields stay");
    for (body, field) in [
        (json!({"name": "  "}), "name"),
        (json!({"relationship": "x".repeat(101)}), "relationship"),
        (json!({"reviewed": false}), "reviewed"),
    ] {
        let problem = expect_problem(
            app.request(Method::PATCH, &format!("/v1/people/{ada}"))
                .json(&body)
                .send()
                .await
                .expect("patch"),
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(problem["field"], field, "{problem}");
    }

    // A correction shows with the fact; `null` takes it back.
    let fact = profile["facts"][0]["fact_id"].as_str().expect("fact id");
    let correction = format!("/v1/people/{ada}/facts/{fact}/correction");
    let (status, corrected) = send(
        &app,
        Method::PUT,
        &correction,
        json!({"correction": "Works at the museum"}),
    )
    .await;
    assert_eq!(status, 200, "{corrected}");
    assert_eq!(corrected["correction"], "Works at the museum");
    assert_eq!(
        corrected["statement"], "Works at the observatory",
        "the evidence's own words stay"
    );
    let shown = get(&app, &format!("/v1/people/{ada}")).await;
    assert_eq!(shown["facts"][0]["correction"], "Works at the museum");
    let (_, back) = send(&app, Method::PUT, &correction, json!({"correction": null})).await;
    assert!(back["correction"].is_null() && back["corrected_at"].is_null(), "{back}");
    expect_problem(
        app.request(
            Method::PUT,
            &format!("/v1/people/{ada}/facts/{}/correction", Uuid::new_v4()),
        )
        .json(&json!({"correction": "x"}))
        .send()
        .await
        .expect("correct"),
        404,
        "person_fact_not_found",
    )
    .await;
    expect_problem(
        app.request(Method::PUT, &correction)
            .json(&json!({}))
            .send()
            .await
            .expect("correct"),
        422,
        "validation_failed",
    )
    .await;

    // Not found, and not the owner's.
    for path in [format!("/v1/people/{}", Uuid::new_v4()), "/v1/people/nope".to_owned()] {
        expect_problem(
            app.request(Method::GET, &path).send().await.expect("get"),
            404,
            "person_not_found",
        )
        .await;
    }
    let stranger = PrincipalId::from_stored("someone-else".to_owned());
    assert!(store.people().get(&stranger, ada).await.expect("get").is_none());
    assert!(!store.people().forget(&stranger, ada).await.expect("forget"));
}

#[tokio::test]
async fn merge_not_the_same_repair_and_forget_are_remembered_by_later_gatherings() {
    let (app, store) = app_with_mailbox().await;
    completed_update(&store).await;
    letter(&store, "a1", "ada@example.com", "I live in London.", 0, None).await;
    letter(
        &store,
        "a2",
        "ada@work.example",
        "I live in London. I prefer tea.",
        1,
        None,
    )
    .await;
    letter(
        &store,
        "b1",
        "bob@example.com",
        "I work at the bakery.\nTel: 020 7946 0000",
        2,
        None,
    )
    .await;
    letter(&store, "b2", "bob@old.example", "Hi", 3, None).await;
    letter(&store, "c1", "cy@example.com", "Hi", 4, None).await;
    letter(&store, "c2", "cy@else.example", "Hi", 5, None).await;
    gather(&store).await;

    // Three pairs share a name.
    let duplicates = get(&app, "/v1/people/duplicates").await;
    let pairs = duplicates["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len(), 3, "{duplicates}");
    let pair_of = |name: &str| -> (Uuid, Uuid) {
        let pair = pairs.iter().find(|pair| pair["first"]["name"] == name).expect("pair");
        (
            pair["first"]["person_id"].as_str().expect("id").parse().expect("id"),
            pair["second"]["person_id"].as_str().expect("id").parse().expect("id"),
        )
    };
    let (ada_one, ada_two) = pair_of("Ada");
    let (cy_one, cy_two) = pair_of("Cy");
    let (bob_one, bob_two) = pair_of("Bob");

    // Merge: one Ada with both addresses, one shared fact kept once.
    let (status, merged) = send(
        &app,
        Method::POST,
        &format!("/v1/people/{ada_one}/merge"),
        json!({"other_person_id": ada_two}),
    )
    .await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["contacts"].as_array().expect("contacts").len(), 2);
    let mut facts: Vec<&str> = merged["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .map(|fact| fact["statement"].as_str().expect("statement"))
        .collect();
    facts.sort_unstable();
    assert_eq!(facts, ["Lives in London", "Prefers tea"]);
    expect_problem(
        app.request(Method::GET, &format!("/v1/people/{ada_two}"))
            .send()
            .await
            .expect("get"),
        404,
        "person_not_found",
    )
    .await;
    let (status, same) = send(
        &app,
        Method::POST,
        &format!("/v1/people/{ada_one}/merge"),
        json!({"other_person_id": ada_one}),
    )
    .await;
    assert_eq!(
        (status, same["code"].as_str()),
        (422, Some("validation_failed")),
        "{same}"
    );

    // Not the same: never offered again.
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/v1/people/{cy_two}/not-the-same"),
        json!({"other_person_id": cy_one}),
    )
    .await;
    assert_eq!(status, 204);
    let offered = get(&app, "/v1/people/duplicates").await;
    assert_eq!(
        offered["pairs"].as_array().expect("pairs").len(),
        1,
        "only Bob's pair: {offered}"
    );

    // Forget the Bob of bob@example.com (the one with a fact): the record and its facts go.
    let bob_profile = get(&app, &format!("/v1/people/{bob_one}")).await;
    let (forgotten, kept) = if bob_profile["facts"].as_array().expect("facts").is_empty() {
        (bob_two, bob_one)
    } else {
        (bob_one, bob_two)
    };
    let facts_before: i64 = sqlx::query_scalar("SELECT count(*) FROM person_facts WHERE person_id = $1")
        .bind(forgotten)
        .fetch_one(&app.db.pool)
        .await
        .expect("count");
    assert_eq!(facts_before, 1);
    let status = app
        .request(Method::DELETE, &format!("/v1/people/{forgotten}"))
        .send()
        .await
        .expect("forget")
        .status()
        .as_u16();
    assert_eq!(status, 204);
    let facts_left: i64 = sqlx::query_scalar("SELECT count(*) FROM person_facts WHERE person_id = $1")
        .bind(forgotten)
        .fetch_one(&app.db.pool)
        .await
        .expect("count");
    assert_eq!(facts_left, 0);
    expect_problem(
        app.request(Method::DELETE, &format!("/v1/people/{forgotten}"))
            .send()
            .await
            .expect("forget"),
        404,
        "person_not_found",
    )
    .await;

    // Later mail from every one of them: the merge, the distinction and the forgetting hold.
    letter(&store, "a3", "ada@work.example", "Hi again", 10, None).await;
    letter(
        &store,
        "b3",
        "bob@example.com",
        "I work at the bakery.\nTel: 020 7946 0000",
        11,
        None,
    )
    .await;
    letter(&store, "c3", "cy@else.example", "Hi", 12, None).await;
    let later = gather(&store).await;
    assert_eq!((later.messages, later.created), (3, 0), "{later:?}");
    let all = get(&app, "/v1/people").await;
    assert_eq!(names(&all).len(), 4, "one Ada, two Cys, one Bob: {all}");
    assert!(
        get(&app, "/v1/people/duplicates").await["pairs"]
            .as_array()
            .expect("pairs")
            .is_empty()
    );
    let digests: i64 = sqlx::query_scalar("SELECT count(*) FROM people_forgotten")
        .fetch_one(&app.db.pool)
        .await
        .expect("count");
    assert!(digests >= 1);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM person_contacts WHERE value LIKE 'bob@%'")
        .fetch_one(&app.db.pool)
        .await
        .expect("count");
    assert_eq!(stored, 1, "only the kept Bob's address is held");

    // Repair identity: split the merged Ada's work address off, and link it back.
    let split_path = format!("/v1/people/{ada_one}/repair");
    let (status, split) = send(
        &app,
        Method::POST,
        &split_path,
        json!({"action": "split", "name": "Ada (work)",
               "contacts": [{"kind": "email", "value": "ADA@work.example"}]}),
    )
    .await;
    assert_eq!(status, 201, "{split}");
    assert_eq!(split["person"]["name"], "Ada (work)");
    assert_eq!(split["person"]["needs_review"], false, "the owner made it");
    assert_eq!(split["contacts"][0]["value"], "ada@work.example");
    let work: Uuid = split["person"]["person_id"].as_str().expect("id").parse().expect("id");
    let ada = get(&app, &format!("/v1/people/{ada_one}")).await;
    assert_eq!(ada["contacts"].as_array().expect("contacts").len(), 1);
    for (body, field) in [
        (
            json!({"action": "split", "name": "X", "contacts": [{"kind": "email", "value": "ada@example.com"}]}),
            "contacts",
        ),
        (
            json!({"action": "split", "name": "X", "contacts": [{"kind": "email", "value": "zed@example.com"}]}),
            "contacts",
        ),
        (json!({"action": "split", "name": "X", "contacts": []}), "contacts"),
        (
            json!({"action": "link", "contact": {"kind": "phone", "value": "12"}}),
            "contact",
        ),
    ] {
        let problem = expect_problem(
            app.request(Method::POST, &split_path)
                .json(&body)
                .send()
                .await
                .expect("repair"),
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(problem["field"], field, "{body}: {problem}");
    }
    // A later gathering keeps the split address with the new person.
    letter(&store, "a4", "ada@work.example", "Hi", 13, None).await;
    assert_eq!(gather(&store).await.created, 0);
    assert_eq!(
        get(&app, &format!("/v1/people/{work}")).await["timeline"]
            .as_array()
            .expect("timeline")
            .len(),
        3
    );
    let (status, linked) = send(
        &app,
        Method::POST,
        &split_path,
        json!({"action": "link", "contact": {"kind": "email", "value": "ada@work.example"}}),
    )
    .await;
    assert_eq!(status, 200, "{linked}");
    assert_eq!(linked["contacts"].as_array().expect("contacts").len(), 2);
    // Linking the forgotten Bob's address is the owner asking: it is held again.
    let forgotten_address = "bob@example.com";
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/v1/people/{kept}/repair"),
        json!({"action": "link", "contact": {"kind": "email", "value": forgotten_address}}),
    )
    .await;
    assert_eq!(status, 200);
    letter(&store, "b4", forgotten_address, "Hi", 14, None).await;
    assert_eq!(gather(&store).await.created, 0);
    assert_eq!(
        get(&app, &format!("/v1/people/{kept}")).await["timeline"]
            .as_array()
            .expect("timeline")
            .len(),
        4,
        "the relinked address's messages are the kept Bob's"
    );
}

#[tokio::test]
async fn import_history_starts_one_at_a_time_in_a_session_outside_the_index_and_cancels() {
    let app = app().await;
    let body = json!({ "since": "2026-01-01", "until": "2026-06-30", "record_limit": 500, "spending_cap": "0.50" });
    let response = app
        .request(Method::POST, "/v1/people/imports")
        .json(&body)
        .send()
        .await
        .expect("start");
    let location = response
        .headers()
        .get("location")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let (status, started) = json(response).await;
    assert_eq!(status, 202, "{started}");
    let id = started["import_id"].as_str().expect("id").to_owned();
    assert_eq!(location, Some(format!("/v1/people/imports/{id}")));
    assert_eq!(
        (
            started["state"].as_str(),
            started["since"].as_str(),
            started["until"].as_str(),
            started["record_limit"].as_u64(),
            started["spending_cap"].as_str(),
            started["records_read"].as_u64(),
            started["spent"].as_str(),
        ),
        (
            Some("queued"),
            Some("2026-01-01"),
            Some("2026-06-30"),
            Some(500),
            Some("0.5"),
            Some(0),
            Some("0")
        )
    );
    // Its session exists and is not in the index.
    let session = started["session_id"].as_str().expect("session");
    let index = get(&app, "/v1/sessions").await;
    assert!(
        !index["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .any(|s| s["session_id"] == session),
        "{index}"
    );

    // One at a time.
    let second = app
        .request(Method::POST, "/v1/people/imports")
        .json(&body)
        .send()
        .await
        .expect("second");
    let problem = expect_problem(second, 409, "people_import_in_progress").await;
    assert!(problem["detail"].as_str().expect("detail").contains(&id), "{problem}");

    assert_eq!(
        get(&app, &format!("/v1/people/imports/{id}")).await["import_id"],
        id.as_str()
    );
    let listed = get(&app, "/v1/people/imports").await;
    assert_eq!(listed["imports"][0]["import_id"], id.as_str());

    let (status, cancelled) = send(
        &app,
        Method::POST,
        &format!("/v1/people/imports/{id}/cancel"),
        json!(null),
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(
        (cancelled["state"].as_str(), cancelled["stop_reason"].as_str()),
        (Some("cancelled"), Some("cancelled"))
    );
    assert!(cancelled["finished_at"].is_string());
    // Cancelling again answers it as it is; a new import may start.
    let (status, again) = send(
        &app,
        Method::POST,
        &format!("/v1/people/imports/{id}/cancel"),
        json!(null),
    )
    .await;
    assert_eq!((status, again["state"].as_str()), (200, Some("cancelled")));
    let (status, _) = send(&app, Method::POST, "/v1/people/imports", body.clone()).await;
    assert_eq!(status, 202);

    for missing in [Uuid::now_v7().to_string(), "not-an-id".to_owned()] {
        let response = app
            .request(Method::GET, &format!("/v1/people/imports/{missing}"))
            .send()
            .await
            .expect("get");
        expect_problem(response, 404, "people_import_not_found").await;
    }
}

#[tokio::test]
async fn an_import_with_a_bad_range_limit_or_cap_is_refused_and_nothing_is_queued() {
    let app = app().await;
    for (body, field) in [
        (
            json!({ "since": "2026-06-30", "until": "2026-01-01", "record_limit": 5, "spending_cap": "0" }),
            Some("until"),
        ),
        (
            json!({ "since": "2026-01-01", "until": "2026-01-01", "record_limit": 0, "spending_cap": "0" }),
            Some("record_limit"),
        ),
        (
            json!({ "since": "2026-01-01", "until": "2026-01-01", "record_limit": 10001, "spending_cap": "0" }),
            Some("record_limit"),
        ),
        (
            json!({ "since": "2026-01-01", "until": "2026-01-01", "record_limit": 5, "spending_cap": "lots" }),
            Some("spending_cap"),
        ),
        (
            json!({ "since": "2026-01-01", "until": "2026-01-01", "record_limit": 5, "spending_cap": "1000.01" }),
            Some("spending_cap"),
        ),
        (
            json!({ "since": "January", "until": "2026-01-01", "record_limit": 5, "spending_cap": "0" }),
            None,
        ),
        (
            json!({ "since": "2026-01-01", "until": "2026-01-01", "record_limit": 5, "spending_cap": "0", "x": 1 }),
            None,
        ),
    ] {
        let response = app
            .request(Method::POST, "/v1/people/imports")
            .json(&body)
            .send()
            .await
            .expect("start");
        let problem = expect_problem(response, 422, "validation_failed").await;
        if let Some(field) = field {
            assert_eq!(problem["field"], field, "{body}: {problem}");
        }
    }
    assert_eq!(get(&app, "/v1/people/imports").await["imports"], json!([]));
}
