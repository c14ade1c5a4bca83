//! Request bodies: the API's JSON parser with the request types of its routes.

use api::untrusted::json_body;
use domain::ErrorCode;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use wire::email::{CreateDraft, ReviewDraft, SaveDraft};
use wire::request::{
    AnswerQuestion, CreateSession, DecideApproval, FolderName, RegisterDevice, RegisterWebPushDevice,
    SaveModelSettings, ScheduleDefinition, SubmitMessage, UpdateSession,
};

use crate::{bounded, inputs, property, serial};

const CREATE_SESSION: &str =
    r#"{"agent_id":"default","metadata":{"title":"Trip","tags":["a","b"],"n":9007199254740991}}"#;
const SUBMIT_MESSAGE: &str =
    r#"{"text":"Book the table for Friday","attachments":["0b5e7a52-51b5-4c1f-8f3e-6d1c2a3b4c5d"]}"#;
const DECIDE: &str = r#"{"decision":"approve_once"}"#;
const ANSWER: &str = r#"{"question_id":"0b5e7a52-51b5-4c1f-8f3e-6d1c2a3b4c5d","text":"Friday at noon"}"#;
const UPDATE_SESSION: &str = r#"{"folder_id":null}"#;
const DEVICE: &str =
    r#"{"client_device_id":"phone-1","push_token":"c0ffee00c0ffee00c0ffee00c0ffee00","environment":"sandbox"}"#;
const WEB_PUSH_DEVICE: &str = r#"{"client_device_id":"browser-1","endpoint":"https://push.example.test/send/abc","p256dh":"BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY","auth":"_ordMnz7uTCmrpBTeUV4Bw"}"#;
const DRAFT: &str = r#"{"thread_id":"0b5e7a52-51b5-4c1f-8f3e-6d1c2a3b4c5d","to":["ada@example.com"],"cc":[],"subject":"Re: lunch","body":"Friday works."}"#;
const REVIEW: &str = r#"{"revision":2}"#;
const SCHEDULE: &str = r#"{"title":"Morning brief","instruction":"Summarize my day","agent_id":"default","agent_version":"1","policy_profile":"default","requested_scopes":["mcp.mail_read.use"],"limits":{"max_steps":8,"max_model_calls":8,"max_tool_calls":8,"max_cost":"0.50"},"run_timeout_seconds":600,"cadence":{"kind":"DAILY","local_time":"07:30:00","timezone":"Europe/Paris"},"misfire_grace_seconds":3600,"max_consecutive_failures":3}"#;

fn corpus() -> Vec<Vec<u8>> {
    [
        CREATE_SESSION,
        SUBMIT_MESSAGE,
        DECIDE,
        ANSWER,
        UPDATE_SESSION,
        SCHEDULE,
        DEVICE,
        WEB_PUSH_DEVICE,
        DRAFT,
        REVIEW,
    ]
    .map(|text| text.as_bytes().to_vec())
    .to_vec()
}

#[test]
fn the_corpus_is_well_formed() {
    let _serial = serial();
    json_body::<CreateSession>(CREATE_SESSION.as_bytes()).expect("create session");
    json_body::<SubmitMessage>(SUBMIT_MESSAGE.as_bytes()).expect("message");
    json_body::<DecideApproval>(DECIDE.as_bytes()).expect("decision");
    json_body::<AnswerQuestion>(ANSWER.as_bytes()).expect("answer");
    json_body::<UpdateSession>(UPDATE_SESSION.as_bytes()).expect("update");
    json_body::<ScheduleDefinition>(SCHEDULE.as_bytes()).expect("schedule");
    json_body::<RegisterDevice>(DEVICE.as_bytes()).expect("device");
    json_body::<RegisterWebPushDevice>(WEB_PUSH_DEVICE.as_bytes()).expect("web push device");
    json_body::<CreateDraft>(DRAFT.as_bytes()).expect("draft");
    json_body::<ReviewDraft>(REVIEW.as_bytes()).expect("review");
}

/// Parses `bytes` as a `T`. A body that parses means what it says: written back as JSON, it
/// parses to the same value (nothing of it was dropped or invented). One that does not earns one
/// of the two problems a body can earn.
fn check<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(bytes: &[u8]) -> Result<(), TestCaseError> {
    match json_body::<T>(bytes) {
        Ok(value) => {
            let written = serde_json::to_vec(&value).expect("a request body serializes");
            let again = json_body::<T>(&written);
            prop_assert!(
                again.as_ref().is_ok_and(|again| *again == value),
                "{:?} then {:?}",
                value,
                again.err().map(|problem| problem.code())
            );
        }
        Err(problem) => prop_assert!(
            matches!(problem.code(), ErrorCode::InvalidRequest | ErrorCode::ValidationFailed),
            "{:?}",
            problem.code()
        ),
    }
    Ok(())
}

#[test]
fn a_request_body_parses_or_earns_a_clean_problem() {
    property(file!(), inputs(corpus()), |bytes| {
        bounded(bytes.len(), || -> Result<(), TestCaseError> {
            check::<CreateSession>(&bytes)?;
            check::<UpdateSession>(&bytes)?;
            check::<SubmitMessage>(&bytes)?;
            check::<DecideApproval>(&bytes)?;
            check::<AnswerQuestion>(&bytes)?;
            check::<ScheduleDefinition>(&bytes)?;
            check::<FolderName>(&bytes)?;
            check::<RegisterDevice>(&bytes)?;
            check::<RegisterWebPushDevice>(&bytes)?;
            check::<SaveModelSettings>(&bytes)?;
            check::<CreateDraft>(&bytes)?;
            check::<SaveDraft>(&bytes)?;
            check::<ReviewDraft>(&bytes)?;
            Ok(())
        })
    });
}
