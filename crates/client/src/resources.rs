//! The server's other resources, each a thin call on the wire types: runs (read, cancel),
//! folders and filing, schedules, pending notifications, model settings, and this device's push
//! registration.

use reqwest::Method;
use uuid::Uuid;
use wire::request::{FolderName, SaveModelSettings, UpdateSession};
use wire::response::{
    Folder, FolderList, ModelSettings, Notification, NotificationList, Occurrence, OccurrenceList, Run, Schedule,
    ScheduleEnvelope, ScheduleList, Session,
};

use crate::{Client, ClientError, Result};

impl Client {
    /// The run `run`.
    pub async fn run(&self, run: Uuid) -> Result<Run> {
        self.get(&format!("v1/runs/{run}")).await
    }

    /// Stops a run (the run-cancel route); one that already ended is `run_not_active`.
    pub async fn cancel_run(&self, run: Uuid) -> Result<Run> {
        self.send(self.request(Method::POST, &format!("v1/runs/{run}/cancel")))
            .await
    }

    /// Every folder, oldest first.
    pub async fn folders(&self) -> Result<Vec<Folder>> {
        Ok(self.get::<FolderList>("v1/folders").await?.folders)
    }

    pub async fn create_folder(&self, name: &str) -> Result<Folder> {
        let body = FolderName { name: name.to_owned() };
        self.json(Method::POST, "v1/folders", &body).await
    }

    pub async fn rename_folder(&self, folder: Uuid, name: &str) -> Result<Folder> {
        let body = FolderName { name: name.to_owned() };
        self.json(Method::PATCH, &format!("v1/folders/{folder}"), &body).await
    }

    /// Deletes a folder; its conversations return to the history.
    pub async fn delete_folder(&self, folder: Uuid) -> Result<()> {
        self.send_empty(self.request(Method::DELETE, &format!("v1/folders/{folder}")))
            .await
    }

    /// Files a conversation into `folder`, or back into the history with `None` (sent as an
    /// explicit null, as the contract asks).
    pub async fn file_session(&self, session: Uuid, folder: Option<Uuid>) -> Result<Session> {
        let body = UpdateSession {
            folder_id: Some(folder),
        };
        self.json(Method::PATCH, &format!("v1/sessions/{session}"), &body).await
    }

    /// Every schedule that is not cancelled.
    pub async fn schedules(&self) -> Result<Vec<Schedule>> {
        Ok(self.get::<ScheduleList>("v1/schedules").await?.schedules)
    }

    pub async fn schedule(&self, schedule: Uuid) -> Result<Schedule> {
        Ok(self
            .get::<ScheduleEnvelope>(&format!("v1/schedules/{schedule}"))
            .await?
            .schedule)
    }

    /// Cancels a schedule at the revision the caller saw (`revision_mismatch` otherwise).
    pub async fn cancel_schedule(&self, schedule: Uuid, expected_revision: i32) -> Result<Schedule> {
        let request = self
            .request(Method::DELETE, &format!("v1/schedules/{schedule}"))
            .query(&[("expected_revision", expected_revision)]);
        Ok(self.send::<ScheduleEnvelope>(request).await?.schedule)
    }

    pub async fn occurrences(&self, schedule: Uuid) -> Result<Vec<Occurrence>> {
        Ok(self
            .get::<OccurrenceList>(&format!("v1/schedules/{schedule}/occurrences"))
            .await?
            .occurrences)
    }

    /// Notifications not yet acknowledged: the offline authority.
    pub async fn notifications(&self) -> Result<Vec<Notification>> {
        Ok(self.get::<NotificationList>("v1/notifications").await?.notifications)
    }

    pub async fn acknowledge(&self, notification: Uuid) -> Result<()> {
        self.send_empty(self.request(Method::POST, &format!("v1/notifications/{notification}/acknowledge")))
            .await
    }

    pub async fn model_settings(&self) -> Result<ModelSettings> {
        self.get("v1/settings/models").await
    }

    /// Saves the model settings; a combination the server does not offer is refused naming
    /// the field (`unsupported_model_choice`).
    pub async fn save_model_settings(&self, settings: &SaveModelSettings) -> Result<ModelSettings> {
        self.json(Method::PUT, "v1/settings/models", settings).await
    }

    /// Revokes this device's push registration. `Ok(false)`: the server knows no such device (or
    /// has no device routes), so there was nothing to revoke.
    pub async fn revoke_device(&self, client_device_id: &str) -> Result<bool> {
        let mut url = self.url("v1/devices");
        url.path_segments_mut()
            .map_err(|()| ClientError::BaseUrl("it cannot take a path".into()))?
            .push(client_device_id);
        match self.send_empty(self.http.delete(url).bearer_auth(&self.token)).await {
            Ok(()) => Ok(true),
            Err(ClientError::Problem { status: 404, .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }
}
