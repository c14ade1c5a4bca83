//! People (`/v1/people`, mounted with `AGENT_MEMORY_API_ENABLED=1`; `people.read`,
//! `people.write`): the owner's correspondents as records gathered from mail, with their
//! contacts, facts (each with its evidence and the owner's correction), timeline and open
//! threads; the Pinned and Needs review collections; duplicates offered as `Merge` or `Not the
//! same`; and `Manage person`: `Repair identity` and `Forget person`.

pub use domain::people::{ContactKind, FactSource, PeopleCollection};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::request::explicit_null;

/// `GET /v1/people` parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListPeople {
    /// Only the people of this collection.
    pub collection: Option<PeopleCollection>,
    /// The `next_cursor` of the previous page; omit it for the first.
    pub cursor: Option<String>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

/// A person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Person {
    pub person_id: Uuid,
    pub name: String,
    /// How they relate to the owner (`sister`), when known.
    pub relationship: Option<String>,
    pub pinned: bool,
    /// Gathered from mail and not reviewed by the owner yet.
    pub needs_review: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
}

/// A page of people, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PeoplePage {
    pub people: Vec<Person>,
    /// Present while more people follow.
    pub next_cursor: Option<String>,
}

/// How a person is reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PersonContact {
    pub kind: ContactKind,
    /// An address in lower case, or a number as `+` and digits.
    pub value: String,
    /// The display name it was last seen with.
    pub name_seen: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub first_seen: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub last_seen: jiff::Timestamp,
}

/// Where a fact came from: a message (of a mail thread), a conversation's run, or the owner
/// (references only; a source the owner deleted shows as none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FactEvidence {
    pub email_thread_id: Option<Uuid>,
    pub provider_message_id: Option<String>,
    pub session_id: Option<Uuid>,
    pub run_id: Option<Uuid>,
}

/// A fact about a person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PersonFact {
    pub fact_id: Uuid,
    /// What was learned, as it was learned.
    pub statement: String,
    pub source: FactSource,
    pub evidence: FactEvidence,
    #[schema(value_type = String, format = DateTime)]
    pub noted_at: jiff::Timestamp,
    /// The owner's correction: shown instead of the statement.
    pub correction: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub corrected_at: Option<jiff::Timestamp>,
}

/// Who sent a message on a person's timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineDirection {
    /// They sent it to the owner.
    FromThem,
    /// The owner sent it to them.
    ToThem,
}

/// A message on a person's timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimelineEntry {
    pub email_thread_id: Uuid,
    pub provider_message_id: String,
    pub subject: String,
    #[schema(value_type = String, format = DateTime)]
    pub sent_at: jiff::Timestamp,
    pub direction: TimelineDirection,
}

/// A conversation with a person waiting for the owner's reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OpenThread {
    pub email_thread_id: Uuid,
    pub subject: String,
    #[schema(value_type = String, format = DateTime)]
    pub latest_at: jiff::Timestamp,
}

/// A person's profile: the names they go by (theirs first, then the names their contacts were
/// seen with), contacts, facts (oldest first), the latest 20 messages of their timeline (newest
/// first) and their open threads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PersonProfile {
    pub person: Person,
    pub names: Vec<String>,
    pub contacts: Vec<PersonContact>,
    pub facts: Vec<PersonFact>,
    pub timeline: Vec<TimelineEntry>,
    pub open_threads: Vec<OpenThread>,
}

/// `PATCH /v1/people/{person_id}`: each member given changes that field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdatePerson {
    /// 1 to 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub name: Option<String>,
    /// 1 to 100 characters; an explicit `null` clears it.
    #[serde(default, deserialize_with = "explicit_null", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub relationship: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pinned: Option<bool>,
    /// `true`: reviewed, out of Needs review (it cannot be put back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reviewed: Option<bool>,
}

/// `PUT /v1/people/{person_id}/facts/{fact_id}/correction`: the owner's correction, or `null`
/// to take it back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectFact {
    /// 1 to 300 characters on one line; `null` takes the correction back.
    #[serde(deserialize_with = "explicit_null")]
    #[schema(value_type = Option<String>, required = true)]
    pub correction: Option<Option<String>>,
}

/// Two records that may be one person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DuplicatePair {
    pub first: Person,
    pub second: Person,
}

/// `GET /v1/people/duplicates`: records that may be one person (the same name), never a pair
/// the owner told apart; at most 50.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Duplicates {
    pub pairs: Vec<DuplicatePair>,
}

/// `POST /v1/people/{person_id}/merge` (the person kept) and
/// `POST /v1/people/{person_id}/not-the-same`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OtherPerson {
    pub other_person_id: Uuid,
}

/// A contact named in a repair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactRef {
    pub kind: ContactKind,
    pub value: String,
}

/// `POST /v1/people/{person_id}/repair`: `Repair identity`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum RepairIdentity {
    /// These contacts of the person belong to someone else: a new person named `name` gets
    /// them (not all of them: one stays), and the two are told apart.
    Split { contacts: Vec<ContactRef>, name: String },
    /// This contact is the person's (taken from whoever held it, or added).
    Link { contact: ContactRef },
}

/// `POST /v1/people/imports`: read the mail already synced in a date range again into People.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartImport {
    /// The first day (UTC) whose messages are read.
    #[schema(value_type = String, format = Date)]
    pub since: jiff::civil::Date,
    /// The last day (UTC) whose messages are read; not before `since`.
    #[schema(value_type = String, format = Date)]
    pub until: jiff::civil::Date,
    /// The most messages read, 1 to 10000.
    #[schema(minimum = 1, maximum = 10000)]
    pub record_limit: u32,
    /// The most the memory model may cost, in USD as a decimal (`"0.50"`; `"0"` asks it nothing),
    /// at most `"1000"`.
    pub spending_cap: String,
}

/// Where an import stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportState {
    Queued,
    Running,
    Completed,
    Cancelled,
    Failed,
}

/// An import of history and its progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PeopleImport {
    pub import_id: Uuid,
    /// The import's own session (outside the session index).
    pub session_id: Uuid,
    #[schema(value_type = String, format = Date)]
    pub since: jiff::civil::Date,
    #[schema(value_type = String, format = Date)]
    pub until: jiff::civil::Date,
    pub record_limit: u32,
    /// USD, a decimal.
    pub spending_cap: String,
    pub state: ImportState,
    /// Why it ended: `range_read`, `record_limit`, `spending_cap`, `cancelled`, or a failure's
    /// code; null while it runs.
    pub stop_reason: Option<String>,
    /// Messages read so far.
    pub records_read: u32,
    pub people_created: u32,
    /// Facts about senders noted.
    pub facts_noted: u32,
    /// Beliefs formed from the owner's sent mail (each flagged for review).
    pub beliefs_formed: u32,
    /// What the memory model cost so far, USD as a decimal.
    pub spent: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<jiff::Timestamp>,
}

/// The owner's latest imports, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PeopleImports {
    pub imports: Vec<PeopleImport>,
}
