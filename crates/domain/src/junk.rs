//! The junk first pass's rules (issue 33): its names, the threshold a judgment must reach, and
//! the two evidence packets an owner reviews before any mail is kept out of the priority inbox.
//!
//! - A **judgment** is a category (`spam`, `bulk` or `keep`) with the classifier's probability
//!   for it. Its junk probability (the combined spam-plus-bulk probability) is the probability
//!   of a `spam` or `bulk` judgment, and one minus that of a `keep`; a judgment **nominates**
//!   its message as junk at [`THRESHOLD`] or above. Bulk is never marked as spam.
//! - The **calibration packet** (`filter` mode) holds the owner's labels of a replayed sample:
//!   each observation only a fingerprint, the observed category and probability, the owner's
//!   label, its source and its stratum. It is admitted when it names the running policy and
//!   model and meets the general floor ([`CalibrationPacket::parse`]).
//! - The **pilot packet** (`pilot` mode) binds a shorter review to the owner, one work account
//!   and a validity of at most seven days ([`PilotPacket::parse`], [`PilotPacket::admitted`]).
//!
//! Fingerprints are 64 lowercase hex digits (a SHA-256, see `email::junk::fingerprint`), so a
//! packet cannot carry a subject, a body or an address in them; nothing else in a packet is
//! free text but the policy and model names, which must equal the running ones.

use std::collections::HashSet;

use jiff::{SignedDuration, Timestamp};
use serde::Deserialize;

use crate::ids::PrincipalId;
use crate::names::names;

/// The general filter's policy: what [`THRESHOLD`], the protected classes and the floor below
/// mean. A calibration packet names it; a change of policy makes every older packet mismatched.
pub const JUNK_POLICY: &str = "steward-junk-1";
/// The work-account pilot's policy, named by a pilot packet.
pub const JUNK_PILOT_POLICY: &str = "steward-junk-pilot-1";

/// The offline rules' name (`email::junk::judge_offline`): the model a packet judged by them
/// names.
pub const OFFLINE_JUNK_MODEL: &str = "steward-junk-rules-1";

/// The model judgments are made with, as a packet must name it: the assessing model's name
/// with `EMAIL_CLASSIFIER=model` (`EMAIL_CLASSIFIER_MODEL`), else the offline rules'.
pub fn running_model(classifier: Option<&str>, model: Option<&str>) -> String {
    match (classifier.map(str::trim), model.map(str::trim)) {
        (Some("model"), Some(model)) if !model.is_empty() => model.to_owned(),
        _ => OFFLINE_JUNK_MODEL.to_owned(),
    }
}

/// The combined spam-plus-bulk probability at which a judgment nominates its message.
pub const THRESHOLD: f64 = 0.99;
/// The longest a pilot packet may be valid.
pub const PILOT_VALIDITY: SignedDuration = SignedDuration::from_hours(7 * 24);
/// New conversations the pilot may keep out of the priority inbox per UTC day.
pub const PILOT_DAILY_CONVERSATIONS: i32 = 50;
/// The only tenant: Steward runs for one owner (spec, part 1), whose tenant and principal share
/// the name `owner`.
pub const OWNER_TENANT: &str = "owner";

/// The general floor (spec, Limits: "Junk general pilot floor").
pub mod general_floor {
    pub const REVIEWED: usize = 100;
    pub const RANDOM: usize = 80;
    pub const PERSONAL_OUTREACH: usize = 10;
    pub const TRANSACTIONAL: usize = 10;
    pub const PREDICTED_JUNK: usize = 20;
    /// The most protected-topic relevance admitted: the mean junk probability the classifier
    /// gave the personal-outreach and transactional observations (the topics the filter must
    /// leave alone) that the owner keeps. A filter with no false positive at the threshold may
    /// still lean towards junk on such mail; this bounds how far.
    pub const PROTECTED_TOPIC_RELEVANCE: f64 = 0.05;
}

/// The work-account pilot's floor (spec, Limits: "Junk work-account pilot").
pub mod pilot_floor {
    pub const CLASSIFICATIONS: usize = 43;
    pub const JUNK_NOMINATIONS: usize = 20;
    pub const KEEP: usize = 7;
}

names! {
    /// What a judgment says a message is.
    JunkCategory ("junk category") {
        Spam => "spam",
        Bulk => "bulk",
        Keep => "keep",
    }
}

names! {
    /// The owner's own label of a reviewed message.
    OwnerLabel ("owner label") {
        Junk => "junk",
        Keep => "keep",
    }
}

names! {
    /// Where an observation's label came from: only the owner's review counts.
    ObservationSource ("observation source") {
        OwnerReview => "owner_review",
    }
}

names! {
    /// Which part of the sample an observation was drawn from.
    Stratum ("stratum") {
        Random => "random",
        PersonalOutreach => "personal_outreach",
        Transactional => "transactional",
    }
}

names! {
    /// What a pilot packet's sample was.
    PilotSample ("pilot sample") {
        SelectedLiveInbox => "selected_live_inbox",
    }
}

names! {
    /// Why a message is never judged junk.
    Protection ("junk protection") {
        /// The owner has written to the sender.
        KnownCorrespondent => "known_correspondent",
        /// The owner chose to keep the sender's subscription.
        KeptSubscription => "kept_subscription",
        /// The owner marked the conversation or the person Important.
        Important => "important",
        /// The owner said the conversation or the person needs a reply.
        NeedsReply => "needs_reply",
        /// The owner said Not spam of the conversation or the sender.
        NotSpam => "not_spam",
        /// An attachment the first pass cannot tell the nature of (anything but an image).
        UnknownAttachment => "unknown_attachment",
        /// The message was not read whole (cut text, no sender).
        IncompleteSource => "incomplete_source",
        /// The classifier's answer was unreadable, or below the threshold.
        Uncertain => "uncertain",
    }
}

names! {
    /// What became of one message the first pass looked at.
    JunkOutcome ("junk outcome") {
        /// Judged and recorded only (`shadow`, or `filter` without admitted evidence).
        Recorded => "recorded",
        /// Kept out of the priority inbox (in Other mail, with an explanation).
        Filtered => "filtered",
        /// Never judged: the message is protected.
        Protected => "protected",
        /// Judged, but not junk at the threshold: ordinary assessment.
        Kept => "kept",
        /// Pilot: junk, but the day's allowance of new conversations was used.
        NoSlot => "no_slot",
    }
}

names! {
    /// Why the configured mode is not the one in force.
    JunkReason ("junk reason") {
        /// No evidence packet at `AGENT_EMAIL_JUNK_FILTER_EVIDENCE`.
        PacketMissing => "packet_missing",
        /// The packet cannot be read, or is not a valid packet.
        PacketInvalid => "packet_invalid",
        /// The packet names another policy or model than the running ones, or another owner.
        PacketMismatched => "packet_mismatched",
        /// The pilot packet is not valid now (expired, or not yet issued).
        PacketExpired => "packet_expired",
        /// The packet does not meet its floor.
        FloorNotMet => "floor_not_met",
        /// Pilot: the account is not the packet's work account.
        NotPilotAccount => "not_pilot_account",
    }
}

names! {
    /// The configured mode (`AGENT_EMAIL_JUNK_FILTER_MODE`), and the mode in force.
    JunkMode ("junk filter mode") {
        Off => "off",
        Shadow => "shadow",
        Filter => "filter",
        Pilot => "pilot",
    }
}

impl From<crate::flags::JunkFilterMode> for JunkMode {
    fn from(mode: crate::flags::JunkFilterMode) -> JunkMode {
        match mode {
            crate::flags::JunkFilterMode::Off => JunkMode::Off,
            crate::flags::JunkFilterMode::Shadow => JunkMode::Shadow,
            crate::flags::JunkFilterMode::Filter => JunkMode::Filter,
            crate::flags::JunkFilterMode::Pilot => JunkMode::Pilot,
        }
    }
}

/// The combined spam-plus-bulk probability of a judgment.
pub fn junk_probability(category: JunkCategory, probability: f64) -> f64 {
    match category {
        JunkCategory::Spam | JunkCategory::Bulk => probability,
        JunkCategory::Keep => 1.0 - probability,
    }
}

/// Whether a judgment nominates its message as junk at [`THRESHOLD`].
pub fn nominates(category: JunkCategory, probability: f64) -> bool {
    category != JunkCategory::Keep && junk_probability(category, probability) >= THRESHOLD
}

/// A message's fingerprint: SHA-256 of the account and the provider's message id, as 64
/// lowercase hex digits. It names the message in judgments and packets without its content.
pub fn fingerprint(account: &crate::ids::AccountId, provider_message_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(b"steward-junk-1\0");
    hash.update(account.as_str().as_bytes());
    hash.update([0]);
    hash.update(provider_message_id.as_bytes());
    hash.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether `text` is a fingerprint: 64 lowercase hex digits.
pub fn is_fingerprint(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why a packet is refused, worded for the operator (never the packet's content beyond an
/// observation's position and the names it got wrong).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PacketRefused {
    #[error("the packet is not valid JSON of its shape: {0}")]
    Shape(String),
    #[error("the packet names policy `{found}`; the running policy is `{expected}`")]
    Policy { expected: &'static str, found: String },
    #[error("the packet names model `{found}`; the running model is `{expected}`")]
    Model { expected: String, found: String },
    #[error("observation {index}: the fingerprint is not 64 lowercase hex digits")]
    Fingerprint { index: usize },
    #[error("observation {index}: the fingerprint repeats an earlier one")]
    Duplicate { index: usize },
    #[error("observation {index}: the probability is not a number from 0 to 1")]
    Probability { index: usize },
    #[error("the floor is not met: {found} {what}, at least {needed} needed")]
    Floor {
        what: &'static str,
        needed: usize,
        found: usize,
    },
    #[error("{count} false positive(s): a message the owner labelled keep is nominated as junk")]
    FalsePositives { count: usize },
    #[error("protected-topic relevance is {found:.3}; at most {max} is admitted")]
    Relevance { found: f64, max: f64 },
    #[error("`{field}` must be timezone-aware (RFC 3339 with an offset): {error}")]
    Time { field: &'static str, error: String },
    #[error("the packet is valid for more than seven days")]
    ValidityTooLong,
    #[error("`expires_at` is not after `issued_at`")]
    EmptyValidity,
    #[error("the packet is for another {what}")]
    NotTheOwner { what: &'static str },
    #[error("the packet is for another work account")]
    OtherAccount,
    #[error("the packet is not valid now: {0}")]
    NotNow(&'static str),
}

impl PacketRefused {
    /// The reason the account reports.
    pub fn reason(&self) -> JunkReason {
        match self {
            PacketRefused::Shape(_)
            | PacketRefused::Fingerprint { .. }
            | PacketRefused::Duplicate { .. }
            | PacketRefused::Probability { .. }
            | PacketRefused::Time { .. }
            | PacketRefused::ValidityTooLong
            | PacketRefused::EmptyValidity => JunkReason::PacketInvalid,
            PacketRefused::Policy { .. } | PacketRefused::Model { .. } | PacketRefused::NotTheOwner { .. } => {
                JunkReason::PacketMismatched
            }
            PacketRefused::Floor { .. } | PacketRefused::FalsePositives { .. } | PacketRefused::Relevance { .. } => {
                JunkReason::FloorNotMet
            }
            PacketRefused::OtherAccount => JunkReason::NotPilotAccount,
            PacketRefused::NotNow(_) => JunkReason::PacketExpired,
        }
    }
}

/// One reviewed observation of the general filter's sample.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationObservation {
    pub fingerprint: String,
    pub category: JunkCategory,
    pub probability: f64,
    pub owner_label: OwnerLabel,
    pub source: ObservationSource,
    pub stratum: Stratum,
}

/// The general filter's evidence packet.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationPacket {
    pub policy: String,
    pub model: String,
    pub observations: Vec<CalibrationObservation>,
}

fn shape<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, PacketRefused> {
    serde_json::from_slice(json).map_err(|error| PacketRefused::Shape(error.to_string()))
}

fn bound(policy: &str, expected_policy: &'static str, model: &str, running_model: &str) -> Result<(), PacketRefused> {
    if policy != expected_policy {
        return Err(PacketRefused::Policy {
            expected: expected_policy,
            found: policy.to_owned(),
        });
    }
    if model != running_model {
        return Err(PacketRefused::Model {
            expected: running_model.to_owned(),
            found: model.to_owned(),
        });
    }
    Ok(())
}

/// Refuses a malformed or repeated fingerprint.
fn unique<'a>(fingerprints: impl Iterator<Item = &'a str>) -> Result<usize, PacketRefused> {
    let mut seen = HashSet::new();
    for (index, fingerprint) in fingerprints.enumerate() {
        if !is_fingerprint(fingerprint) {
            return Err(PacketRefused::Fingerprint { index });
        }
        if !seen.insert(fingerprint) {
            return Err(PacketRefused::Duplicate { index });
        }
    }
    Ok(seen.len())
}

fn floor(what: &'static str, needed: usize, found: usize) -> Result<(), PacketRefused> {
    if found < needed {
        return Err(PacketRefused::Floor { what, needed, found });
    }
    Ok(())
}

impl CalibrationPacket {
    /// Reads `json` strictly (an unknown member anywhere is refused) and admits it against the
    /// running policy ([`JUNK_POLICY`]) and `running_model`, and the general floor.
    pub fn parse(json: &[u8], running_model: &str) -> Result<CalibrationPacket, PacketRefused> {
        let packet: CalibrationPacket = shape(json)?;
        bound(&packet.policy, JUNK_POLICY, &packet.model, running_model)?;
        let observations = &packet.observations;
        for (index, observation) in observations.iter().enumerate() {
            if !(0.0..=1.0).contains(&observation.probability) {
                return Err(PacketRefused::Probability { index });
            }
        }
        let reviewed = unique(observations.iter().map(|observation| observation.fingerprint.as_str()))?;
        let in_stratum = |stratum| observations.iter().filter(|o| o.stratum == stratum).count();
        let nominated = |o: &&CalibrationObservation| nominates(o.category, o.probability);
        floor("unique reviewed observations", general_floor::REVIEWED, reviewed)?;
        floor(
            "random observations",
            general_floor::RANDOM,
            in_stratum(Stratum::Random),
        )?;
        floor(
            "personal-outreach observations",
            general_floor::PERSONAL_OUTREACH,
            in_stratum(Stratum::PersonalOutreach),
        )?;
        floor(
            "transactional observations",
            general_floor::TRANSACTIONAL,
            in_stratum(Stratum::Transactional),
        )?;
        floor(
            "predicted junk",
            general_floor::PREDICTED_JUNK,
            observations.iter().filter(nominated).count(),
        )?;
        let false_positives = observations
            .iter()
            .filter(nominated)
            .filter(|o| o.owner_label == OwnerLabel::Keep)
            .count();
        if false_positives > 0 {
            return Err(PacketRefused::FalsePositives { count: false_positives });
        }
        let kept_topics: Vec<f64> = observations
            .iter()
            .filter(|o| o.stratum != Stratum::Random && o.owner_label == OwnerLabel::Keep)
            .map(|o| junk_probability(o.category, o.probability))
            .collect();
        // Nothing kept there would measure nothing: one at least.
        floor(
            "kept personal-outreach or transactional observations",
            1,
            kept_topics.len(),
        )?;
        let relevance = kept_topics.iter().sum::<f64>() / kept_topics.len() as f64;
        // A hair of tolerance: 1 - 0.95 is a little over 0.05 in binary.
        if relevance > general_floor::PROTECTED_TOPIC_RELEVANCE + 1e-9 {
            return Err(PacketRefused::Relevance {
                found: relevance,
                max: general_floor::PROTECTED_TOPIC_RELEVANCE,
            });
        }
        Ok(packet)
    }
}

/// One reviewed observation of a pilot's live sample.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PilotObservation {
    pub fingerprint: String,
    pub category: JunkCategory,
    pub owner_label: OwnerLabel,
    pub source: ObservationSource,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PilotDocument {
    policy: String,
    model: String,
    tenant_id: String,
    principal_id: String,
    account_id: String,
    sample: PilotSample,
    issued_at: String,
    expires_at: String,
    observations: Vec<PilotObservation>,
}

/// The work-account pilot's evidence packet, read and bound to the running policy and model.
#[derive(Clone, Debug, PartialEq)]
pub struct PilotPacket {
    pub tenant_id: String,
    pub principal_id: String,
    pub account_id: String,
    pub sample: PilotSample,
    pub issued_at: Timestamp,
    pub expires_at: Timestamp,
    pub observations: Vec<PilotObservation>,
}

/// A timestamp with its offset: a civil time without one is refused.
fn aware(field: &'static str, text: &str) -> Result<Timestamp, PacketRefused> {
    text.parse::<Timestamp>().map_err(|error| PacketRefused::Time {
        field,
        error: error.to_string(),
    })
}

impl PilotPacket {
    /// Reads `json` strictly and checks what does not depend on who asks or when: the policy
    /// ([`JUNK_PILOT_POLICY`]) and `running_model`, the sample, a validity of at most seven
    /// days, and the pilot floor.
    pub fn parse(json: &[u8], running_model: &str) -> Result<PilotPacket, PacketRefused> {
        let document: PilotDocument = shape(json)?;
        bound(&document.policy, JUNK_PILOT_POLICY, &document.model, running_model)?;
        let issued_at = aware("issued_at", &document.issued_at)?;
        let expires_at = aware("expires_at", &document.expires_at)?;
        if expires_at <= issued_at {
            return Err(PacketRefused::EmptyValidity);
        }
        if expires_at.duration_since(issued_at) > PILOT_VALIDITY {
            return Err(PacketRefused::ValidityTooLong);
        }
        let observations = document.observations;
        let classifications = unique(observations.iter().map(|observation| observation.fingerprint.as_str()))?;
        let nominated = observations.iter().filter(|o| o.category != JunkCategory::Keep).count();
        let keep = observations
            .iter()
            .filter(|o| o.owner_label == OwnerLabel::Keep)
            .count();
        floor("unique classifications", pilot_floor::CLASSIFICATIONS, classifications)?;
        floor("junk nominations", pilot_floor::JUNK_NOMINATIONS, nominated)?;
        floor("keep labels", pilot_floor::KEEP, keep)?;
        let false_positives = observations
            .iter()
            .filter(|o| o.category != JunkCategory::Keep && o.owner_label == OwnerLabel::Keep)
            .count();
        if false_positives > 0 {
            return Err(PacketRefused::FalsePositives { count: false_positives });
        }
        Ok(PilotPacket {
            tenant_id: document.tenant_id,
            principal_id: document.principal_id,
            account_id: document.account_id,
            sample: document.sample,
            issued_at,
            expires_at,
            observations,
        })
    }

    /// Whether the packet admits the pilot for `principal` on `account` at `now`: the approved
    /// owner, the packet's work account, and `issued_at <= now < expires_at`.
    pub fn admitted(&self, principal: &PrincipalId, account: &str, now: Timestamp) -> Result<(), PacketRefused> {
        if self.tenant_id != OWNER_TENANT {
            return Err(PacketRefused::NotTheOwner { what: "tenant" });
        }
        if self.principal_id != principal.as_str() {
            return Err(PacketRefused::NotTheOwner { what: "principal" });
        }
        if self.account_id != account {
            return Err(PacketRefused::OtherAccount);
        }
        if now < self.issued_at {
            return Err(PacketRefused::NotNow("it is not yet issued"));
        }
        if now >= self.expires_at {
            return Err(PacketRefused::NotNow("it has expired"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
