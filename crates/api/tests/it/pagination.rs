//! Keyset pagination of the session index under concurrent inserts and deletes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, expect_problem};

const CREATORS: usize = 5;
const PER_CREATOR: usize = 50;
const PAGE: usize = 7;

#[tokio::test]
async fn every_session_is_seen_exactly_once_while_sessions_are_created_and_deleted() {
    let app = Arc::new(TestApp::spawn().await);
    let created = Arc::new(AtomicUsize::new(0));
    let mut creators = Vec::new();
    for _ in 0..CREATORS {
        let (app, created) = (app.clone(), created.clone());
        creators.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..PER_CREATOR {
                let session = app.create_session(json!({})).await;
                ids.push(session["session_id"].as_str().expect("id").to_owned());
                created.fetch_add(1, Ordering::SeqCst);
            }
            ids
        }));
    }

    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut cursors = HashSet::new();
    let mut deleted = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        // Page only while more sessions have committed than were seen (or creation is over), so
        // the pager never reaches the end before the creators finish; creates stay in flight.
        loop {
            let done = created.load(Ordering::SeqCst) == CREATORS * PER_CREATOR;
            if done || created.load(Ordering::SeqCst) > seen.len() + PAGE {
                break;
            }
            tokio::task::yield_now().await;
        }
        let path = match &cursor {
            Some(cursor) => format!("/v1/sessions?limit={PAGE}&cursor={cursor}"),
            None => format!("/v1/sessions?limit={PAGE}"),
        };
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, 200, "{page}");
        pages += 1;
        let rows = page["sessions"].as_array().expect("rows");
        for row in rows {
            *seen
                .entry(row["session_id"].as_str().expect("id").to_owned())
                .or_default() += 1;
            assert!(
                row.get("folder_id").is_some() && row.get("schedule_id").is_some() && row.get("last_run_id").is_some()
            );
        }
        // Every third page, delete the row the next cursor is anchored on.
        if pages % 3 == 0
            && let Some(anchor) = rows.last()
        {
            let id = anchor["session_id"].as_str().expect("id");
            let response = app
                .request(Method::DELETE, &format!("/v1/sessions/{id}"))
                .send()
                .await
                .expect("send");
            assert_eq!(response.status(), 204);
            deleted.insert(id.to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(next) => {
                assert!(cursors.insert(next.to_owned()), "the server repeated cursor {next}");
                cursor = Some(next.to_owned());
            }
            None => break,
        }
    }

    let mut all = Vec::new();
    for creator in creators {
        all.extend(creator.await.expect("creator"));
    }
    assert_eq!(all.len(), CREATORS * PER_CREATOR);
    for id in &all {
        assert_eq!(seen.get(id), Some(&1), "session {id} seen {:?} times", seen.get(id));
    }
    assert_eq!(seen.len(), all.len(), "nothing unknown was listed");
    assert!(!deleted.is_empty());

    // The index now holds exactly the sessions that were not deleted.
    let (_, last) = app.get_json("/v1/sessions?limit=200").await;
    let (_, rest) = app
        .get_json(&format!(
            "/v1/sessions?limit=200&cursor={}",
            last["next_cursor"].as_str().expect("more")
        ))
        .await;
    assert_eq!(rest["next_cursor"], Value::Null, "no cursor at the end");
    let remaining = last["sessions"].as_array().expect("rows").len() + rest["sessions"].as_array().expect("rows").len();
    assert_eq!(remaining, all.len() - deleted.len());
}

#[tokio::test]
async fn forged_altered_and_foreign_cursors_are_rejected() {
    let app = TestApp::spawn().await;
    for _ in 0..3 {
        app.create_session(json!({})).await;
    }
    let (_, page) = app.get_json("/v1/sessions?limit=1").await;
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();

    // A cursor can be replayed: it names a position, so the same page comes back.
    let (_, again) = app.get_json(&format!("/v1/sessions?limit=1&cursor={cursor}")).await;
    let (_, again2) = app.get_json(&format!("/v1/sessions?limit=1&cursor={cursor}")).await;
    assert_eq!(again["sessions"], again2["sessions"]);

    let mut altered = cursor.clone().into_bytes();
    let last = altered.len() - 3;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ascii");
    for bad in [altered.as_str(), "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not*base64"] {
        let response = app
            .request(Method::GET, &format!("/v1/sessions?cursor={bad}"))
            .send()
            .await
            .expect("send");
        expect_problem(response, 400, "invalid_cursor").await;
    }

    // An empty `cursor=` is no cursor: the first page, not a 400 the document never promised.
    let (status, first_again) = app.get_json("/v1/sessions?limit=1&cursor=").await;
    assert_eq!(status, 200);
    let (_, first_page) = app.get_json("/v1/sessions?limit=1").await;
    assert_eq!(first_again["sessions"], first_page["sessions"]);

    // A cursor signed by another deployment (another token) is refused.
    let other = TestApp::spawn().await;
    let response = other
        .request(Method::GET, &format!("/v1/sessions?cursor={cursor}"))
        .send()
        .await
        .expect("send");
    expect_problem(response, 400, "invalid_cursor").await;

    for limit in ["0", "201", "x"] {
        let response = app
            .request(Method::GET, &format!("/v1/sessions?limit={limit}"))
            .send()
            .await
            .expect("send");
        expect_problem(response, 400, "invalid_request").await;
    }
}
