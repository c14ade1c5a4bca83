//! What the assistant is told, in both directions.
//!
//! Inbound: [`NumberSettings`], pushed to the provider's number settings, are built from the
//! configuration alone: the public name, the assistant's name and the reviewed public profile.
//! Nothing private exists here to leak: this crate reads no table, no memory, no mail.
//! Outbound: an approved [`Brief`] becomes the dispatch request.
//!
//! Neither direction announces AI identity or transcription unprompted; asked directly, the
//! assistant confirms both ([`identity_rule`]).

use serde_json::{Value, json};

use domain::call::{Brief, CallConfiguration};

/// The honesty rule both directions carry.
pub fn identity_rule(config: &CallConfiguration) -> String {
    format!(
        "Do not say on your own that you are an AI or that the call is transcribed. If the other \
         person asks whether you are an AI, a bot or a person, say truthfully that you are {}, an \
         AI assistant. If they ask whether the call is recorded or transcribed, say truthfully \
         that it is transcribed for {}.",
        config.assistant(),
        config.public_name
    )
}

/// The number settings pushed at activation.
#[derive(Clone, Debug, PartialEq)]
pub struct NumberSettings {
    /// The members pushed, each compared on read-back.
    pub body: serde_json::Map<String, Value>,
}

/// The members that clear anything earlier set on the number that would let it do more than
/// take a message from the public profile (a scripted pathway, tools, transfers, data fetched
/// during the call). A provider that ignores or refuses one blocks activation.
pub const CLEARING_MEMBERS: [&str; 4] = ["pathway_id", "tools", "transfer_phone_number", "dynamic_data"];

/// Why pushed number settings did not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsMismatch {
    #[error(
        "the call provider did not clear `{0}` on the number; activation is blocked until the number's settings can be cleared"
    )]
    NotCleared(String),
    #[error("the call provider kept a different `{0}` on the number than was pushed; activation is blocked")]
    Differs(String),
}

impl NumberSettings {
    /// The settings for `config`'s number.
    pub fn for_configuration(config: &CallConfiguration) -> NumberSettings {
        let prompt = format!(
            "You are {assistant}, answering the phone for {name}. {name} cannot come to the phone. \
             Take a message: ask for the caller's name, how to reach them and what the call is \
             about, and tell them {name} will get the message.\n\
             What you may tell a caller about {name} is only this public profile:\n\
             <public_profile>\n{profile}\n</public_profile>\n\
             Share nothing else about {name}, and make no commitment, appointment or agreement on \
             their behalf. Keep the call under {minutes} minutes.\n{identity}",
            assistant = config.assistant(),
            name = config.public_name,
            profile = config.public_profile,
            minutes = config.max_duration_minutes,
            identity = identity_rule(config),
        );
        let body = json!({
            "prompt": prompt,
            "first_sentence": format!(
                "Hello, you've reached {}. This is {}, how can I help?",
                config.public_name,
                config.assistant()
            ),
            "voice": config.voice,
            "max_duration": config.max_duration_minutes,
            "webhook": config.webhook_url,
            "record": false,
            "pathway_id": null,
            "tools": [],
            "transfer_phone_number": null,
            "dynamic_data": [],
        });
        let Value::Object(body) = body else {
            unreachable!("a JSON object literal")
        };
        NumberSettings { body }
    }

    /// The prompt pushed for inbound calls.
    pub fn prompt(&self) -> &str {
        self.body.get("prompt").and_then(Value::as_str).unwrap_or_default()
    }

    /// Compares the provider's read-back of the number with what was pushed.
    pub fn check_read_back(&self, read: &Value) -> Result<(), SettingsMismatch> {
        for (name, pushed) in &self.body {
            let kept = read.get(name).unwrap_or(&Value::Null);
            let same = match pushed {
                // A number is a number however the provider writes it (5 or 5.0).
                Value::Number(n) => kept.as_f64() == n.as_f64(),
                _ => kept == pushed,
            };
            if !same {
                return Err(if CLEARING_MEMBERS.contains(&name.as_str()) {
                    SettingsMismatch::NotCleared(name.clone())
                } else {
                    SettingsMismatch::Differs(name.clone())
                });
            }
        }
        Ok(())
    }
}

/// The dispatch request for `brief` under `config`, tagged with `reference` (the local call's
/// id) so a dispatch of unknown outcome can be found in the provider's history.
pub fn dispatch_request(brief: &Brief, config: &CallConfiguration, reference: &str) -> Value {
    let voicemail = match &brief.voicemail_message {
        Some(message) => format!("If you reach voicemail, leave exactly this message and hang up: \"{message}\""),
        None => "If you reach voicemail, hang up without leaving a message.".to_owned(),
    };
    let task = format!(
        "You are {assistant}, calling on behalf of {name}.\n\
         The purpose of the call:\n<purpose>\n{purpose}\n</purpose>\n\
         What you may say, and nothing beyond it:\n<may_say>\n{may_say}\n</may_say>\n\
         Share nothing else about {name}, and make no commitment or agreement beyond what \
         you may say. {voicemail} End the call when the purpose is done; keep it under \
         {minutes} minutes.\n{identity}",
        assistant = config.assistant(),
        name = config.public_name,
        purpose = brief.purpose,
        may_say = brief.may_say,
        minutes = config.max_duration_minutes,
        identity = identity_rule(config),
    );
    let body = json!({
        "phone_number": brief.to,
        "from": config.phone_number,
        "task": task,
        "first_sentence": format!("Hello, this is {}, calling on behalf of {}.", config.assistant(), config.public_name),
        "voice": config.voice,
        "max_duration": config.max_duration_minutes,
        "webhook": config.webhook_url,
        "wait_for_greeting": true,
        "record": false,
        "voicemail": match &brief.voicemail_message {
            Some(message) => json!({ "action": "leave_message", "message": message }),
            None => json!({ "action": "hangup" }),
        },
        "metadata": { "steward_call": reference },
    });
    body
}
