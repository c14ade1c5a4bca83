//! Notifications: what a push alert may carry. The tap payload is a closed, version-1
//! dictionary of a kind and ids; alert text names the next action and, for approvals, the tool.
//! Neither can hold message text, recipients, subjects, bodies, instructions, results or
//! failure details: the types below have no field that could.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::schedule::OccurrenceState;

/// What a notification is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    Approval,
    Question,
    ScheduleOutcome,
    /// A call finished (after reconciliation); delivered without delay.
    CallFinished,
}

impl NotificationKind {
    pub fn parse(text: &str) -> Option<NotificationKind> {
        match text {
            "approval" => Some(NotificationKind::Approval),
            "question" => Some(NotificationKind::Question),
            "schedule_outcome" => Some(NotificationKind::ScheduleOutcome),
            "call_finished" => Some(NotificationKind::CallFinished),
            _ => None,
        }
    }
}

/// How a device receives pushes: an APNs token, or a browser's Web Push subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Apns,
    WebPush,
}

impl DeviceKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Apns => "apns",
            DeviceKind::WebPush => "web_push",
        }
    }

    pub fn parse(text: &str) -> Option<DeviceKind> {
        match text {
            "apns" => Some(DeviceKind::Apns),
            "web_push" => Some(DeviceKind::WebPush),
            _ => None,
        }
    }
}

/// The version-1 tap payload: a kind and ids, nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TapPayload {
    pub v: u8,
    pub kind: NotificationKind,
    pub notification_id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occurrence_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<Uuid>,
}

/// What the alert says: the next action, and for approvals the tool's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Alert<'a> {
    Approval {
        tool: &'a str,
    },
    Question,
    /// A schedule outcome: `completed`, `failed`, `cancelled` or `skipped`, with the skip or
    /// failure reason code when there is one, the title of the schedule revision that ran and the
    /// local wall time it was scheduled for (both kept with the occurrence).
    ScheduleOutcome {
        state: OccurrenceState,
        reason: Option<&'a str>,
        title: Option<&'a str>,
        scheduled_local: Option<&'a str>,
    },
    /// A call finished: `New call result`.
    CallFinished,
}

/// Tool names are identifiers; anything else is not shown.
fn tool_name(tool: &str) -> &str {
    let identifier = !tool.is_empty()
        && tool.len() <= 64
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if identifier { tool } else { "a tool" }
}

impl Alert<'_> {
    pub fn text(&self) -> String {
        match self {
            Alert::Approval { tool } => format!("Approval needed: {}", tool_name(tool)),
            Alert::Question => "Your agent has a question".to_owned(),
            Alert::ScheduleOutcome {
                state,
                reason,
                title,
                scheduled_local,
            } => {
                let outcome = match (*state, *reason) {
                    (OccurrenceState::Skipped, Some("misfire")) => "skipped, it started too late",
                    (OccurrenceState::Skipped, _) => "skipped",
                    (OccurrenceState::Completed, _) => "completed",
                    (OccurrenceState::Failed, Some("schedule.authorization_failed")) => "not authorized",
                    (OccurrenceState::Cancelled, Some("deadline")) => "cancelled, it ran out of time",
                    (OccurrenceState::Cancelled, _) => "cancelled",
                    (OccurrenceState::Failed | OccurrenceState::Started, _) => "failed",
                };
                let title = title
                    .map(str::trim)
                    .filter(|title| !title.is_empty() && !title.chars().any(char::is_control));
                match (title, scheduled_local) {
                    (Some(title), Some(at)) => format!("{title} ({at}): {outcome}"),
                    (Some(title), None) => format!("{title}: {outcome}"),
                    (None, Some(at)) => format!("Scheduled run ({at}): {outcome}"),
                    (None, None) => format!("Scheduled run: {outcome}"),
                }
            }
            Alert::CallFinished => "New call result".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tap_payload_is_ids_only() {
        let id = Uuid::nil();
        let payload = TapPayload {
            v: 1,
            kind: NotificationKind::Approval,
            notification_id: id,
            session_id: Some(id),
            run_id: None,
            approval_id: Some(id),
            question_id: None,
            occurrence_id: None,
            call_id: None,
        };
        let json = serde_json::to_value(&payload).expect("json");
        let keys: Vec<&str> = json.as_object().expect("object").keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 5);
        for key in keys {
            assert!(
                ["v", "kind", "notification_id", "session_id", "approval_id"].contains(&key),
                "{key}"
            );
        }
    }

    #[test]
    fn alert_text_never_shows_anything_but_an_identifier() {
        assert_eq!(
            Alert::Approval {
                tool: "mcp.mail_send.send_message"
            }
            .text(),
            "Approval needed: mcp.mail_send.send_message"
        );
        assert_eq!(
            Alert::Approval {
                tool: "Dear Bob, the password is hunter2"
            }
            .text(),
            "Approval needed: a tool"
        );
        assert_eq!(
            Alert::ScheduleOutcome {
                state: OccurrenceState::Skipped,
                reason: Some("misfire"),
                title: Some("Morning brief"),
                scheduled_local: Some("2026-11-24 07:00"),
            }
            .text(),
            "Morning brief (2026-11-24 07:00): skipped, it started too late"
        );
    }

    #[test]
    fn schedule_alerts_name_the_schedule_the_time_and_the_outcome() {
        let alert = |state, reason| {
            Alert::ScheduleOutcome {
                state,
                reason,
                title: Some("Inbox digest"),
                scheduled_local: Some("2026-11-24 07:00"),
            }
            .text()
        };
        let cases = [
            ("completed", None, "completed"),
            ("failed", Some("agent.model_unavailable"), "failed"),
            ("failed", Some("schedule.authorization_failed"), "not authorized"),
            ("cancelled", Some("deadline"), "cancelled, it ran out of time"),
            ("cancelled", Some("requested"), "cancelled"),
            ("skipped", Some("misfire"), "skipped, it started too late"),
        ];
        for (state, reason, outcome) in cases {
            assert_eq!(
                alert(OccurrenceState::parse(state).expect("a state"), reason),
                format!("Inbox digest (2026-11-24 07:00): {outcome}")
            );
        }
        let untitled = Alert::ScheduleOutcome {
            state: OccurrenceState::Completed,
            reason: None,
            title: None,
            scheduled_local: None,
        };
        assert_eq!(untitled.text(), "Scheduled run: completed");
    }
}
