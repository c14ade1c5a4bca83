//! Folder proposals: made by the worker's `folders.propose` tool (here through the worker's own
//! store login), listed, accepted (renaming a new folder) or declined through the routes.

use domain::folder::FolderName;
use domain::ids::{FolderId, PrincipalId, SessionId};
use reqwest::Method;
use serde_json::{Value, json};
use store::{LeftOut, ProposalTarget, Propose};
use uuid::Uuid;

use crate::folders::file;
use crate::support::{TestApp, expect_problem, json};

fn session_id(text: &str) -> SessionId {
    SessionId::parse(text).expect("session id")
}

/// Proposes through the worker's login, as the tool does, for a fresh invocation.
async fn propose(worker: &store::Store, target: ProposalTarget<'_>, sessions: &[&str]) -> Propose {
    propose_for(worker, target, sessions, Uuid::new_v4()).await
}

/// Proposes as tool invocation `invocation`.
async fn propose_for(
    worker: &store::Store,
    target: ProposalTarget<'_>,
    sessions: &[&str],
    invocation: Uuid,
) -> Propose {
    let sessions: Vec<SessionId> = sessions.iter().map(|id| session_id(id)).collect();
    worker
        .propose_folder(&PrincipalId::owner(), target, &sessions, invocation)
        .await
        .expect("propose")
}

fn proposed_id(outcome: &Propose) -> String {
    match outcome {
        Propose::Proposed { proposal, .. } => proposal.id.to_string(),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

async fn post(app: &TestApp, path: &str, body: Option<Value>) -> reqwest::Response {
    let request = app.request(Method::POST, path);
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    request.send().await.expect("send")
}

async fn folder_of(app: &TestApp, session: &str) -> Value {
    let (status, body) = app.get_json(&format!("/v1/sessions/{session}")).await;
    assert_eq!(status, 200);
    body["folder_id"].clone()
}

#[tokio::test]
async fn a_new_folder_proposal_is_listed_then_accepted_under_a_new_name_filing_its_sessions_at_once() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let (a, b) = (app.new_session().await, app.new_session().await);
    let name = FolderName::parse("Trip to Lisbon").expect("name");
    let outcome = propose(&worker, ProposalTarget::NewFolder(&name), &[&b, &a]).await;
    let id = proposed_id(&outcome);

    let (status, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(status, 200);
    assert_eq!(list["proposals"].as_array().map(Vec::len), Some(1));
    let listed = &list["proposals"][0];
    assert_eq!(listed["proposal_id"], id.as_str());
    assert_eq!(listed["folder_id"], Value::Null, "a new folder has no id yet");
    assert_eq!(listed["name"], "Trip to Lisbon");
    assert_eq!(listed["session_ids"], json!([a, b]), "in index order");
    assert_eq!(folder_of(&app, &a).await, Value::Null, "proposing files nothing");
    assert_eq!(app.count("folders").await, 0, "proposing makes no folder");

    let accepted = post(
        &app,
        &format!("/v1/folder-proposals/{id}/accept"),
        Some(json!({ "name": " Lisbon 2026 " })),
    )
    .await;
    let (status, accepted) = json(accepted).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["proposal_id"], id.as_str());
    assert_eq!(
        accepted["folder"]["name"], "Lisbon 2026",
        "renamed on acceptance, trimmed"
    );
    assert_eq!(accepted["session_ids"], json!([a, b]));
    let folder = accepted["folder"]["folder_id"].clone();
    assert_eq!(folder_of(&app, &a).await, folder);
    assert_eq!(folder_of(&app, &b).await, folder);
    let (_, folders) = app.get_json("/v1/folders").await;
    assert_eq!(folders["folders"][0]["name"], "Lisbon 2026");

    let (_, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(list["proposals"], json!([]), "an accepted proposal is no longer listed");
    let again = post(&app, &format!("/v1/folder-proposals/{id}/accept"), None).await;
    expect_problem(again, 409, "folder_proposal_resolved").await;
    let decline = post(&app, &format!("/v1/folder-proposals/{id}/decline"), None).await;
    expect_problem(decline, 409, "folder_proposal_resolved").await;
    app.assert_no_open_transactions().await;
}

#[tokio::test]
async fn an_existing_folder_proposal_files_only_sessions_still_unfiled_and_cannot_be_renamed() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let (_, folder) = json(post(&app, "/v1/folders", Some(json!({ "name": "Work" }))).await).await;
    let (_, other) = json(post(&app, "/v1/folders", Some(json!({ "name": "Home" }))).await).await;
    let work = FolderId::parse(folder["folder_id"].as_str().expect("id")).expect("folder id");
    let (a, b) = (app.new_session().await, app.new_session().await);
    let id = proposed_id(&propose(&worker, ProposalTarget::Folder(work), &[&a, &b]).await);

    // The owner files one of them elsewhere meanwhile: the owner's move stands.
    let moved = file(&app, &b, other["folder_id"].clone()).await;
    assert_eq!(moved.status(), 200);
    let (_, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(
        list["proposals"][0]["session_ids"],
        json!([a]),
        "only what it can still file"
    );
    assert_eq!(list["proposals"][0]["folder_id"], folder["folder_id"]);
    assert_eq!(list["proposals"][0]["name"], "Work");

    let renamed = post(
        &app,
        &format!("/v1/folder-proposals/{id}/accept"),
        Some(json!({ "name": "Office" })),
    )
    .await;
    expect_problem(renamed, 409, "folder_proposal_not_renamable").await;

    // An empty JSON object is the same as no body.
    let (status, accepted) =
        json(post(&app, &format!("/v1/folder-proposals/{id}/accept"), Some(json!({}))).await).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["session_ids"], json!([a]));
    assert_eq!(accepted["folder"]["folder_id"], folder["folder_id"]);
    assert_eq!(folder_of(&app, &a).await, folder["folder_id"]);
    assert_eq!(folder_of(&app, &b).await, other["folder_id"]);
}

#[tokio::test]
async fn a_declined_proposal_never_comes_back_for_the_same_sessions_and_folder() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let (a, b) = (app.new_session().await, app.new_session().await);
    let travel = FolderName::parse("Travel").expect("name");
    let id = proposed_id(&propose(&worker, ProposalTarget::NewFolder(&travel), &[&a]).await);

    // While it waits, its session is in no other proposal.
    let other = FolderName::parse("Misc").expect("name");
    match propose(&worker, ProposalTarget::NewFolder(&other), &[&a]).await {
        Propose::Nothing(left_out) => assert_eq!(left_out, [(session_id(&a), LeftOut::Pending)]),
        other => panic!("a pending session was proposed again: {other:?}"),
    }

    for _ in 0..2 {
        let declined = post(&app, &format!("/v1/folder-proposals/{id}/decline"), None).await;
        assert_eq!(declined.status(), 204, "declining twice is fine");
    }
    let (_, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(list["proposals"], json!([]));
    let accept = post(&app, &format!("/v1/folder-proposals/{id}/accept"), None).await;
    expect_problem(accept, 409, "folder_proposal_resolved").await;

    // The same folder (by any case) never gets that session proposed again; another session can be.
    let shouted = FolderName::parse("TRAVEL").expect("name");
    match propose(&worker, ProposalTarget::NewFolder(&shouted), &[&a, &b]).await {
        Propose::Proposed { proposal, left_out } => {
            assert_eq!(proposal.session_ids, [session_id(&b)]);
            assert_eq!(left_out, [(session_id(&a), LeftOut::Declined)]);
        }
        other => panic!("expected a proposal of the other session: {other:?}"),
    }
    // Once the owner has a folder of that name, proposing it by id remembers the decline too.
    let (_, folder) = json(post(&app, "/v1/folders", Some(json!({ "name": "Travel" }))).await).await;
    let folder = FolderId::parse(folder["folder_id"].as_str().expect("id")).expect("folder id");
    match propose(&worker, ProposalTarget::Folder(folder), &[&a]).await {
        Propose::Nothing(left_out) => assert_eq!(left_out, [(session_id(&a), LeftOut::Declined)]),
        other => panic!("a declined session came back: {other:?}"),
    }
    // A different folder is a different question.
    assert!(matches!(
        propose(&worker, ProposalTarget::NewFolder(&other), &[&a]).await,
        Propose::Proposed { .. }
    ));
}

#[tokio::test]
async fn scheduled_filed_and_unknown_sessions_are_never_proposed_and_the_tool_is_idempotent() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let (plain, scheduled, filed) = (
        app.new_session().await,
        app.new_session().await,
        app.new_session().await,
    );
    sqlx::query("UPDATE sessions SET schedule_id = $1 WHERE id = $2::uuid")
        .bind(Uuid::new_v4())
        .bind(&scheduled)
        .execute(&app.db.pool)
        .await
        .expect("mark scheduled");
    let (_, folder) = json(post(&app, "/v1/folders", Some(json!({ "name": "Kept" }))).await).await;
    let filing = file(&app, &filed, folder["folder_id"].clone()).await;
    assert_eq!(filing.status(), 200);
    let unknown = Uuid::new_v4().to_string();

    let name = FolderName::parse("Sorted").expect("name");
    let sessions = [plain.as_str(), &scheduled, &filed, &unknown];
    let invocation = Uuid::new_v4();
    let first = propose_for(&worker, ProposalTarget::NewFolder(&name), &sessions, invocation).await;
    let Propose::Proposed { proposal, left_out } = first else {
        panic!("expected a proposal: {first:?}");
    };
    assert_eq!(proposal.session_ids, [session_id(&plain)]);
    assert_eq!(
        left_out,
        [
            (session_id(&scheduled), LeftOut::Scheduled),
            (session_id(&filed), LeftOut::Filed),
            (session_id(&unknown), LeftOut::NotFound),
        ]
    );
    // A repeated dispatch of the same invocation finds the first proposal.
    let again = propose_for(&worker, ProposalTarget::NewFolder(&name), &sessions, invocation).await;
    assert_eq!(again, Propose::Earlier(proposal.id));
    assert_eq!(app.count("folder_proposals").await, 1);

    // A new-folder name some folder already has proposes that folder.
    let kept = FolderName::parse("kept").expect("name");
    let other = app.new_session().await;
    match propose(&worker, ProposalTarget::NewFolder(&kept), &[&other]).await {
        Propose::Proposed { proposal, .. } => {
            assert_eq!(
                proposal.folder_id.map(|id| id.to_string()).as_deref(),
                folder["folder_id"].as_str()
            );
            assert_eq!(proposal.name, "Kept");
        }
        other => panic!("expected a proposal: {other:?}"),
    }
    let gone = FolderId::from_uuid(Uuid::new_v4());
    assert_eq!(
        propose(&worker, ProposalTarget::Folder(gone), &[&other]).await,
        Propose::FolderNotFound
    );
}

#[tokio::test]
async fn a_taken_name_stale_proposal_or_bad_request_changes_nothing() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let (a, c) = (app.new_session().await, app.new_session().await);
    let name = FolderName::parse("Receipts").expect("name");
    let id = proposed_id(&propose(&worker, ProposalTarget::NewFolder(&name), &[&a]).await);
    let path = format!("/v1/folder-proposals/{id}/accept");
    let shouted = FolderName::parse("RECEIPTS").expect("name");
    let other = proposed_id(&propose(&worker, ProposalTarget::NewFolder(&shouted), &[&c]).await);

    // The owner makes a folder of that name meanwhile. Accepted as proposed (a JSON null is no
    // body), the proposal files into it; renamed on acceptance to a name in use, it clashes and
    // the session stays unfiled (nothing half-done).
    let (status, made) = json(post(&app, "/v1/folders", Some(json!({ "name": "receipts" }))).await).await;
    assert_eq!(status, 201);
    let (status, accepted) =
        json(post(&app, &format!("/v1/folder-proposals/{other}/accept"), Some(Value::Null)).await).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["folder"], made, "the folder of that name, unchanged");
    assert_eq!(folder_of(&app, &c).await, made["folder_id"]);
    let clash = post(&app, &path, Some(json!({ "name": "RECEIPTS" }))).await;
    expect_problem(clash, 409, "folder_name_taken").await;
    assert_eq!(folder_of(&app, &a).await, Value::Null);
    assert_eq!(app.count("folders").await, 1);

    let blank = post(&app, &path, Some(json!({ "name": "  " }))).await;
    let body = expect_problem(blank, 422, "validation_failed").await;
    assert_eq!(body["field"], "name");
    let extra = post(&app, &path, Some(json!({ "folder": "x" }))).await;
    expect_problem(extra, 422, "validation_failed").await;
    let text = app
        .request(Method::POST, &path)
        .header("content-type", "text/plain")
        .body("name=x")
        .send()
        .await
        .expect("send");
    expect_problem(text, 415, "unsupported_media_type").await;
    for missing in [
        format!("/v1/folder-proposals/{}/accept", Uuid::new_v4()),
        "/v1/folder-proposals/not-an-id/accept".to_owned(),
        format!("/v1/folder-proposals/{}/decline", Uuid::new_v4()),
    ] {
        expect_problem(post(&app, &missing, None).await, 404, "folder_proposal_not_found").await;
    }

    // Its only session is deleted: the proposal is stale, unlisted, and cannot be accepted.
    let deleted = app
        .request(Method::DELETE, &format!("/v1/sessions/{a}"))
        .send()
        .await
        .expect("send");
    assert_eq!(deleted.status(), 204);
    let (_, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(list["proposals"], json!([]));
    expect_problem(
        post(&app, &path, Some(json!({ "name": "Other" }))).await,
        409,
        "folder_proposal_stale",
    )
    .await;
    assert_eq!(app.count("folders").await, 1, "a stale acceptance makes no folder");
    app.assert_no_open_transactions().await;
}

#[tokio::test]
async fn proposals_need_the_session_scopes() {
    let app = TestApp::spawn_with(crate::support::Env::default().set("AUTH_SCOPES", "sessions.read")).await;
    let (status, _) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(status, 200);
    for action in ["accept", "decline"] {
        let path = format!("/v1/folder-proposals/{}/{action}", Uuid::new_v4());
        expect_problem(post(&app, &path, None).await, 403, "insufficient_scope").await;
    }
}

#[tokio::test]
async fn at_most_twenty_proposals_wait_for_the_owner() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let mut sessions = Vec::new();
    for _ in 0..=store::MAX_PENDING_PROPOSALS {
        sessions.push(app.new_session().await);
    }
    for (index, session) in sessions.iter().enumerate().take(20) {
        let name = FolderName::parse(&format!("Folder {index}")).expect("name");
        proposed_id(&propose(&worker, ProposalTarget::NewFolder(&name), &[session]).await);
    }
    let name = FolderName::parse("One more").expect("name");
    assert_eq!(
        propose(&worker, ProposalTarget::NewFolder(&name), &[&sessions[20]]).await,
        Propose::TooManyPending
    );
    let (_, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(list["proposals"].as_array().map(Vec::len), Some(20));
    // Settling one makes room.
    let first = list["proposals"][0]["proposal_id"].as_str().expect("id").to_owned();
    let declined = post(&app, &format!("/v1/folder-proposals/{first}/decline"), None).await;
    assert_eq!(declined.status(), 204);
    proposed_id(&propose(&worker, ProposalTarget::NewFolder(&name), &[&sessions[20]]).await);
}

#[tokio::test]
async fn a_session_the_owner_files_leaves_waiting_proposals_for_good() {
    let app = TestApp::spawn().await;
    let worker = app.db.store_as("worker").await;
    let a = app.new_session().await;
    let name = FolderName::parse("Later").expect("name");
    let id = proposed_id(&propose(&worker, ProposalTarget::NewFolder(&name), &[&a]).await);
    let (_, folder) = json(post(&app, "/v1/folders", Some(json!({ "name": "Now" }))).await).await;
    for target in [folder["folder_id"].clone(), Value::Null] {
        let moved = file(&app, &a, target).await;
        assert_eq!(moved.status(), 200);
    }
    // Unfiled again, it is not back in the old proposal, which is stale for good.
    let (_, list) = app.get_json("/v1/folder-proposals").await;
    assert_eq!(list["proposals"], json!([]));
    let accept = post(&app, &format!("/v1/folder-proposals/{id}/accept"), None).await;
    expect_problem(accept, 409, "folder_proposal_stale").await;
    // And it can be proposed afresh.
    proposed_id(&propose(&worker, ProposalTarget::NewFolder(&name), &[&a]).await);
}

#[tokio::test]
async fn two_proposals_racing_for_one_session_record_one() {
    let app = TestApp::spawn().await;
    let (one, two) = (app.db.store_as("worker").await, app.db.store_as("worker").await);
    let a = app.new_session().await;
    let (first, second) = (
        FolderName::parse("First").expect("name"),
        FolderName::parse("Second").expect("name"),
    );
    for _ in 0..5 {
        let sessions = [a.as_str()];
        let (x, y) = tokio::join!(
            propose(&one, ProposalTarget::NewFolder(&first), &sessions),
            propose(&two, ProposalTarget::NewFolder(&second), &sessions),
        );
        let proposed = [&x, &y]
            .iter()
            .filter(|outcome| matches!(outcome, Propose::Proposed { .. }))
            .count();
        let refused = [&x, &y]
            .iter()
            .filter(|outcome| **outcome == &Propose::Nothing(vec![(session_id(&a), LeftOut::Pending)]))
            .count();
        assert_eq!((proposed, refused), (1, 1), "{x:?} / {y:?}");
        let (_, list) = app.get_json("/v1/folder-proposals").await;
        let id = list["proposals"][0]["proposal_id"].as_str().expect("id").to_owned();
        assert_eq!(list["proposals"].as_array().map(Vec::len), Some(1));
        // Cleared for the next round by the owner filing and unfiling it.
        let (_, folder) = json(post(&app, "/v1/folders", Some(json!({ "name": id }))).await).await;
        for target in [folder["folder_id"].clone(), Value::Null] {
            let moved = file(&app, &a, target).await;
            assert_eq!(moved.status(), 200);
        }
    }
}
