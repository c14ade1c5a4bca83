//! Folders: create, list, rename, delete; filing sessions and unfiling them with an explicit null.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, expect_problem, json};

async fn create_folder(app: &TestApp, name: &str) -> Value {
    let response = app
        .request(Method::POST, "/v1/folders")
        .json(&json!({ "name": name }))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 201);
    assert!(response.headers().contains_key("location"));
    response.json().await.expect("folder")
}

/// Files `session` into `folder` (`null` unfiles).
pub(crate) async fn file(app: &TestApp, session: &str, folder: Value) -> reqwest::Response {
    app.request(Method::PATCH, &format!("/v1/sessions/{session}"))
        .json(&json!({ "folder_id": folder }))
        .send()
        .await
        .expect("send")
}

#[tokio::test]
async fn folders_can_be_created_listed_renamed_and_deleted() {
    let app = TestApp::spawn().await;
    let travel = create_folder(&app, "  Travel ").await;
    assert_eq!(travel["name"], "Travel", "names are trimmed");
    let work = create_folder(&app, "Work").await;

    let (status, list) = app.get_json("/v1/folders").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = list["folders"]
        .as_array()
        .expect("folders")
        .iter()
        .map(|f| f["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["Travel", "Work"]);

    let taken = app
        .request(Method::POST, "/v1/folders")
        .json(&json!({ "name": "travel" }))
        .send()
        .await
        .expect("send");
    expect_problem(taken, 409, "folder_name_taken").await;
    let blank = app
        .request(Method::POST, "/v1/folders")
        .json(&json!({ "name": "   " }))
        .send()
        .await
        .expect("send");
    let body = expect_problem(blank, 422, "validation_failed").await;
    assert_eq!(body["field"], "name");

    let work_path = format!("/v1/folders/{}", work["folder_id"].as_str().expect("id"));
    let renamed = app
        .request(Method::PATCH, &work_path)
        .json(&json!({ "name": "Office" }))
        .send()
        .await
        .expect("send");
    let (status, renamed) = json(renamed).await;
    assert_eq!((status, renamed["name"].as_str()), (200, Some("Office")));
    let clash = app
        .request(Method::PATCH, &work_path)
        .json(&json!({ "name": "TRAVEL" }))
        .send()
        .await
        .expect("send");
    expect_problem(clash, 409, "folder_name_taken").await;

    assert_eq!(app.send(Method::DELETE, &work_path).await.status(), 204);
    expect_problem(app.send(Method::DELETE, &work_path).await, 404, "folder_not_found").await;
    let rename_gone = app
        .request(Method::PATCH, &work_path)
        .json(&json!({ "name": "x" }))
        .send()
        .await
        .expect("send");
    expect_problem(rename_gone, 404, "folder_not_found").await;
    let (_, list) = app.get_json("/v1/folders").await;
    assert_eq!(list["folders"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn sessions_move_into_folders_and_back_and_folder_deletion_returns_them_to_history() {
    let app = TestApp::spawn().await;
    let folder = create_folder(&app, "Projects").await;
    let folder_id = folder["folder_id"].clone();
    let session = app.create_session(json!({})).await;
    let id = session["session_id"].as_str().expect("id");

    let (status, moved) = json(file(&app, id, folder_id.clone()).await).await;
    assert_eq!((status, moved["folder_id"].clone()), (200, folder_id.clone()));
    let (_, index) = app.get_json("/v1/sessions").await;
    assert_eq!(
        index["sessions"][0]["folder_id"], folder_id,
        "the index carries folder_id"
    );

    let (status, unfiled) = json(file(&app, id, Value::Null).await).await;
    assert_eq!(
        (status, unfiled["folder_id"].clone()),
        (200, Value::Null),
        "an explicit null unfiles"
    );

    // A body without folder_id is not an unfile request.
    let empty = app
        .request(Method::PATCH, &format!("/v1/sessions/{id}"))
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    let body = expect_problem(empty, 422, "validation_failed").await;
    assert_eq!(body["field"], "folder_id");
    let unknown = file(&app, id, json!(uuid::Uuid::new_v4())).await;
    expect_problem(unknown, 409, "unknown_folder").await;
    expect_problem(
        file(&app, &uuid::Uuid::new_v4().to_string(), Value::Null).await,
        404,
        "session_not_found",
    )
    .await;

    file(&app, id, folder_id.clone()).await;
    let folder_path = format!("/v1/folders/{}", folder_id.as_str().expect("id"));
    assert_eq!(app.send(Method::DELETE, &folder_path).await.status(), 204);
    let (status, back) = app.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(
        (status, back["folder_id"].clone()),
        (200, Value::Null),
        "the conversation returned to history"
    );
}

#[tokio::test]
async fn scheduled_sessions_never_enter_a_folder() {
    let app = TestApp::spawn().await;
    let folder = create_folder(&app, "Inbox zero").await;
    let session = app.create_session(json!({})).await;
    let id = session["session_id"].as_str().expect("id");
    let schedule = uuid::Uuid::new_v4();
    sqlx::query("UPDATE sessions SET schedule_id = $1 WHERE id = $2::uuid")
        .bind(schedule)
        .bind(id)
        .execute(&app.db.pool)
        .await
        .expect("mark scheduled");

    let (_, read) = app.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(read["schedule_id"], schedule.to_string());
    expect_problem(
        file(&app, id, folder["folder_id"].clone()).await,
        409,
        "scheduled_session_not_fileable",
    )
    .await;
    assert_eq!(
        file(&app, id, Value::Null).await.status(),
        200,
        "unfiling a scheduled session is a no-op"
    );

    // The database refuses it too, whatever the code path.
    let direct = sqlx::query("UPDATE sessions SET folder_id = $1::uuid WHERE id = $2::uuid")
        .bind(folder["folder_id"].as_str().expect("id"))
        .bind(id)
        .execute(&app.db.pool)
        .await
        .expect_err("check constraint");
    assert!(
        direct.to_string().contains("scheduled_sessions_are_never_filed"),
        "{direct}"
    );
}
