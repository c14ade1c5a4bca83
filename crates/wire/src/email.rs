//! Email mode's `/v1/email` wire format: accounts with their freshness and coverage, the inbox
//! listings, a thread's reading pane, and the durable operations that refresh a mailbox or change
//! a conversation in it.

pub use domain::email::{
    AllowanceWait, DraftAuthor, EmailOperationKind, EmailOperationState, ExclusionKind, Importance, InboxView,
};
pub use domain::feedback::{ContentKind, FeedbackScope, FeedbackSignal};
pub use domain::junk::{JunkCategory, JunkMode, JunkReason};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// A connected mail account as Email mode keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailAccount {
    pub account_id: String,
    /// The mailbox's address, once the first update has read it.
    pub address: Option<String>,
    /// `pending` until the first update completes, then `current`.
    pub freshness: Freshness,
    /// When the last update completed (null while the first is awaited).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub updated_at: Option<jiff::Timestamp>,
    /// The historical coverage: mail from this time on is in the projection.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub coverage_from: Option<jiff::Timestamp>,
    /// The last update's failure, a stable code; cleared by the next completed update.
    pub last_error: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_error_at: Option<jiff::Timestamp>,
    /// Why new mail waits unassessed.
    pub waiting: Option<AllowanceWait>,
    /// Whether unsubscribe assistance is offered for this account.
    pub unsubscribe_supported: bool,
    /// Whether Report spam, Not spam and the suspected-spam flag are offered.
    pub spam_supported: bool,
    /// The tool a Review & Send from this account asks approval for
    /// (`mcp.mail_send.send_message` for the default account, `mcp.mail_<id>_send.send_message`
    /// for another); null when this server cannot send from it.
    pub send_tool: Option<String>,
    /// The junk first pass on this account: the configured mode, the mode in force and why
    /// they differ.
    pub junk_filter: JunkFilterStanding,
}

/// The junk first pass on an account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JunkFilterStanding {
    /// `AGENT_EMAIL_JUNK_FILTER_MODE` as configured.
    pub mode: JunkMode,
    /// The mode in force, as the async worker last found it: `filter` without admitted evidence
    /// behaves as `shadow`; `pilot` on another account, or without admitted evidence, makes no
    /// calls (`off`). Null until the async worker has looked under this configuration.
    pub in_force: Option<JunkMode>,
    /// Why the mode in force is not the configured one: `packet_missing`, `packet_invalid`,
    /// `packet_mismatched`, `packet_expired`, `floor_not_met`, `not_pilot_account`.
    pub reason: Option<JunkReason>,
}

/// Why the junk first pass keeps a conversation out of the priority inbox (in Other mail).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JunkExplanation {
    /// `spam` (the conversation also carries the suspected-spam flag) or `bulk` (never
    /// marked as spam).
    pub category: JunkCategory,
    /// The judgment's probability, from 0.99 to 1.
    pub probability: f64,
    /// Which mode kept it out: `filter` or `pilot`.
    pub mode: JunkMode,
    /// The sentence the row shows.
    pub explanation: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Freshness {
    /// Awaiting its first completed update.
    Pending,
    /// At least one update completed.
    Current,
}

/// `GET /v1/email/accounts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailAccountList {
    pub accounts: Vec<EmailAccount>,
}

/// `GET /v1/email/threads` parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListEmailThreads {
    /// `important` (default) or `other`.
    pub view: Option<InboxView>,
    /// Only this account's conversations.
    #[param(min_length = 1, max_length = 64, pattern = "^[a-z0-9_-]+$")]
    pub account_id: Option<String>,
    /// Words looked for in the subject, correspondents, gist and text (case-insensitive, as one
    /// phrase; `%` and `_` are literal).
    #[param(min_length = 1, max_length = 200, pattern = r"^[^\u0000]*$")]
    pub q: Option<String>,
    /// The `next_cursor` of the previous page of the same view; omit it (or leave it empty)
    /// for the first page.
    pub cursor: Option<String>,
    /// Page size: default 5 for `important` (the initial request shows the five most important
    /// conversations), 25 for `other`.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

/// A correspondent: an address and the display name it came with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Correspondent {
    pub name: Option<String>,
    pub address: String,
}

/// Where a conversation is in its mailbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MailboxPlace {
    Inbox,
    Archived,
    Spam,
}

/// The one state line a row shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadState {
    /// In the Inbox, needs the owner's reply (amber).
    NeedsReply,
    /// In the Inbox, for the owner's attention (amber).
    ForYourAttention,
    /// Archived by the owner through Steward (soft ink, the Handled circle filled).
    Handled,
    /// Out of the Inbox otherwise (soft ink).
    Archived,
    /// Reported as spam by the owner through Steward (soft ink).
    Reported,
    /// A reply is being written, or waits to be sent (teal).
    Draft,
    /// A send from this conversation's draft has an unknown outcome; the mailbox is being
    /// checked, and it is never sent again (amber).
    CheckSendStatus,
}

/// A conversation as a row of the inbox shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailThreadSummary {
    pub thread_id: Uuid,
    pub account_id: String,
    /// The provider's id of the conversation (a reply's approval names it as `thread_id`).
    pub provider_thread_id: String,
    pub subject: String,
    /// Each sender once, in order of first message.
    pub correspondents: Vec<Correspondent>,
    /// The newest message's date.
    #[schema(value_type = String, format = DateTime)]
    pub latest_at: jiff::Timestamp,
    pub message_count: u32,
    pub has_attachments: bool,
    pub place: MailboxPlace,
    /// The row's state line, if any.
    pub state: Option<ThreadState>,
    /// Null until the classifier has assessed the newest message.
    pub importance: Option<Importance>,
    /// A one-line gist of the newest message (untrusted mail content, shown as text).
    pub gist: Option<String>,
    /// The classifier version that assessed it (`jev-1.13.0`).
    pub classifier: Option<String>,
    /// The server flags it as suspected spam (cleared by `POST …/spam-flag`).
    pub suspected_spam: bool,
    /// The conversation's newest draft (`/v1/email/drafts/{draft_id}`), if any.
    pub draft_id: Option<Uuid>,
    /// What kind of content its newest message is; null until assessed.
    pub kind: Option<ContentKind>,
    /// The owner's feedback that decided what the row shows instead of the classifier (its
    /// importance, its reply need, or both): the row's reason.
    pub reasons: Vec<Feedback>,
    /// Why the junk first pass keeps it out of the priority inbox; null when it does not.
    pub junk: Option<JunkExplanation>,
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailThreadPage {
    pub threads: Vec<EmailThreadSummary>,
    /// Present while more rows follow; pass it back as `cursor` with the same view.
    pub next_cursor: Option<String>,
}

/// An attachment's metadata; its bytes are never stored or served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AttachmentMeta {
    pub filename: Option<String>,
    pub media_type: String,
    pub size_bytes: u64,
}

/// One message of the reading pane: plain text (HTML reduced to text, no remote content).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailMessage {
    pub message_id: String,
    pub from: Option<Correspondent>,
    pub to: Vec<Correspondent>,
    pub cc: Vec<Correspondent>,
    #[schema(value_type = String, format = DateTime)]
    pub sent_at: jiff::Timestamp,
    pub subject: String,
    pub text: String,
    /// The text was cut at 100,000 characters.
    pub text_cut: bool,
    pub attachments: Vec<AttachmentMeta>,
}

/// `GET /v1/email/threads/{thread_id}`: the row and its messages, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailThread {
    #[serde(flatten)]
    pub summary: EmailThreadSummary,
    pub messages: Vec<EmailMessage>,
    /// With unsubscribe assistance on, the census row of the newest message's sender, when it
    /// sends bulk mail: the reading pane offers the same Unsubscribe as the Subscriptions view.
    #[serde(default)]
    pub subscription: Option<Subscription>,
}

/// A sender of bulk mail to one account: a row of the census.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Subscription {
    pub subscription_id: Uuid,
    pub account_id: String,
    pub sender: Correspondent,
    /// Conversations from the sender in the refresh window.
    pub conversations: u32,
    #[schema(value_type = String, format = DateTime)]
    pub last_arrival_at: jiff::Timestamp,
    /// What an unsubscribe would send; null while the evidence is unverified or the sender
    /// offers nothing Steward can send (a web page only).
    pub mechanism: Option<domain::email::UnsubscribeMechanism>,
    /// With `one_click`, the host the request goes to (`One-click request to <host>`); with
    /// `mailto`, the address (`Sends an email to <address>`). Never a path, query or URI.
    pub destination: Option<String>,
    /// `unverified` reads `Checking…`: the evidence (the newest message's DKIM signature) is
    /// not verified, and the row cannot be unsubscribed.
    pub state: domain::email::SubscriptionState,
    /// A known correspondent, or a sender of Important or Needs-reply mail: Select all skips it.
    pub protected: bool,
    /// What a command confirms, with `revision`.
    #[schema(min_length = 64, max_length = 64, pattern = "^[0-9a-f]{64}$")]
    pub evidence_digest: String,
    pub revision: i64,
    /// Why the last unsubscribe did not succeed: a stable code (`unsubscribe.redirect_refused`,
    /// `unsubscribe.no_answer`, …); null otherwise.
    pub last_error: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub unsubscribed_at: Option<jiff::Timestamp>,
}

/// A durable mailbox operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailOperation {
    pub operation_id: Uuid,
    pub kind: EmailOperationKind,
    pub state: EmailOperationState,
    pub account_id: String,
    /// The conversation a write changes; null for a refresh.
    pub thread_id: Option<Uuid>,
    /// A stable code when it failed or was left uncertain (`mail.outcome_unknown`).
    pub error: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
    /// When an uncertain write was settled by reading the conversation.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reconciled_at: Option<jiff::Timestamp>,
    /// A proposed reply's draft; null for other operations.
    pub draft_id: Option<Uuid>,
    /// An unsubscribe command's senders, in order, each with its own outcome; empty for other
    /// operations.
    #[serde(default)]
    pub targets: Vec<UnsubscribeTargetStatus>,
}

/// One target of an unsubscribe operation, as `GET /v1/email/operations/{id}` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UnsubscribeTargetStatus {
    pub subscription_id: Uuid,
    pub mechanism: domain::email::UnsubscribeMechanism,
    /// The host or address, as on the row.
    pub destination: String,
    pub state: domain::email::EmailOperationState,
    /// A stable code when it failed or was left uncertain.
    pub error: Option<String>,
}

/// `POST /v1/email/threads/{thread_id}/proposal`: the queued proposal and the draft it lands in
/// (the conversation's draft, or a new reply to its senders).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProposalAnswer {
    pub operation: EmailOperation,
    pub draft: Draft,
}

/// `POST /v1/email/accounts/{account_id}/refresh`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RefreshAnswer {
    /// False when a refresh of the account was admitted within the last 60 seconds: `operation`
    /// is that one, and no new one was made.
    pub admitted: bool,
    pub operation: EmailOperation,
}

/// Declares a request body that carries a draft's content: its own members, then `to`, `cc`,
/// `subject` and `body` with their limits. The content members are declared here once rather
/// than flattened from [`DraftContent`]: serde cannot refuse unknown members around a flattened
/// struct, and these bodies refuse them.
macro_rules! draft_body {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$member_meta:meta])* pub $member:ident: $type:ty,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$member_meta])* pub $member: $type,)*
            #[serde(default)]
            #[schema(max_items = 100)]
            pub to: Vec<String>,
            #[serde(default)]
            #[schema(max_items = 100)]
            pub cc: Vec<String>,
            #[serde(default)]
            #[schema(max_length = 998)]
            pub subject: String,
            #[serde(default)]
            #[schema(max_length = 100000)]
            pub body: String,
        }
    };
}

draft_body! {
    /// `POST /v1/email/drafts`: a new message from `account_id`, or a reply in `thread_id`
    /// (exactly one of the two). Saving a draft is not a mailbox write.
    pub struct CreateDraft {
        #[schema(min_length = 1, max_length = 64, pattern = "^[a-z0-9_-]+$")]
        pub account_id: Option<String>,
        pub thread_id: Option<Uuid>,
    }
}

draft_body! {
    /// `PUT /v1/email/drafts/{draft_id}`: the next revision, saved only if `expected_revision`
    /// is still the newest (otherwise 409 `revision_mismatch` with both versions).
    pub struct SaveDraft {
        #[serde(deserialize_with = "crate::request::whole")]
        #[schema(minimum = 1)]
        pub expected_revision: u32,
    }
}

/// `POST /v1/email/drafts/{draft_id}/revisions/{revision}/restore`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreDraft {
    #[serde(deserialize_with = "crate::request::whole")]
    #[schema(minimum = 1)]
    pub expected_revision: u32,
}

/// What a revision holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DraftContent {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    pub body: String,
}

/// One saved version of a draft.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DraftRevision {
    pub revision: u32,
    #[serde(flatten)]
    pub content: DraftContent,
    pub author: DraftAuthor,
    /// The revision this one restores.
    pub restored_from: Option<u32>,
    #[schema(value_type = String, format = DateTime)]
    pub saved_at: jiff::Timestamp,
}

/// A draft and its newest revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Draft {
    pub draft_id: Uuid,
    pub account_id: String,
    /// The conversation it replies in; null for a new message.
    pub thread_id: Option<Uuid>,
    #[serde(flatten)]
    pub newest: DraftRevision,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    /// The newest Review & Send of this draft and what became of it; null until one is asked for.
    pub send: Option<DraftSend>,
}

/// What became of a frozen draft's send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendState {
    /// Frozen; the worker has not raised its approval yet.
    Preparing,
    /// Its approval waits for the owner.
    AwaitingApproval,
    /// Approved once; the worker is sending it.
    Sending,
    /// Sent (answered by the provider, or found in the mailbox after an uncertain outcome).
    Sent,
    /// The send may or may not have happened (`mail.outcome_unknown`); the mailbox is being
    /// checked, and it is never sent again. The row reads `Check send status`.
    OutcomeUnknown,
    /// The check found nothing; that proves nothing, so look in Sent before sending again.
    Unconfirmed,
    /// Not sent: denied, expired, voided by a later save, or refused (see `code`).
    NotSent,
}

/// A draft's newest freeze: the revision it froze, the approval that sends exactly it, and its state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DraftSend {
    /// The frozen revision.
    pub revision: u32,
    pub state: SendState,
    /// The run that sends it, in the draft's own send session.
    pub run_id: Uuid,
    pub session_id: Uuid,
    /// The approval of the account's `send_message` call with exactly the frozen revision,
    /// once the worker raised it. Verify it against the revision before approving once.
    pub approval: Option<crate::response::Approval>,
    /// Why it was not sent (`approval.denied`, `draft_changed`, `deadline`, a mail code), or
    /// `mail.outcome_unknown`.
    pub code: Option<String>,
}

/// `POST /v1/email/drafts/{draft_id}/review`: Review & Send the newest revision, which must be
/// `revision` (the one the owner reviewed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewDraft {
    #[serde(deserialize_with = "crate::request::whole")]
    #[schema(minimum = 1)]
    pub revision: u32,
}

/// `GET /v1/email/drafts/{draft_id}/revisions`: every revision, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DraftHistory {
    pub draft_id: Uuid,
    pub revisions: Vec<DraftRevision>,
}

/// Most recipients a draft names in `to`, and again in `cc`.
pub const MAX_RECIPIENTS: usize = 100;
/// Longest subject (RFC 5322's line length) and body, in characters.
pub const MAX_SUBJECT_CHARS: usize = 998;
pub const MAX_BODY_CHARS: usize = 100_000;

/// A plausible address: one `@` between a local part and a domain, nothing that would change a
/// header's meaning (white space, control characters, `<>,;:"()[]\`), at most 320 characters.
fn plausible_address(address: &str) -> bool {
    let Some((local, domain)) = address.split_once('@') else {
        return false;
    };
    address.len() <= 320
        && !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && address
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !"<>,;:\"()[]\\".contains(c))
}

/// A draft's content checked: plausible addresses, a one-line subject, no NUL.
fn checked(
    to: Vec<String>,
    cc: Vec<String>,
    subject: String,
    body: String,
) -> Result<DraftContent, crate::request::Invalid> {
    use crate::request::Invalid;
    for (field, list) in [("to", &to), ("cc", &cc)] {
        if list.len() > MAX_RECIPIENTS {
            return Err(Invalid::new(field, format!("at most {MAX_RECIPIENTS} recipients")));
        }
        if let Some((index, _)) = list.iter().enumerate().find(|(_, address)| !plausible_address(address)) {
            return Err(Invalid::new(&format!("{field}.{index}"), "not an email address"));
        }
    }
    if subject.chars().count() > MAX_SUBJECT_CHARS || subject.contains(['\r', '\n', '\0']) {
        return Err(Invalid::new(
            "subject",
            format!("one line of at most {MAX_SUBJECT_CHARS} characters"),
        ));
    }
    if body.chars().count() > MAX_BODY_CHARS || body.contains('\0') {
        return Err(Invalid::new(
            "body",
            format!("at most {MAX_BODY_CHARS} characters, without NUL"),
        ));
    }
    Ok(DraftContent { to, cc, subject, body })
}

impl CreateDraft {
    /// Where the draft goes and what it holds, checked.
    pub fn checked(self) -> Result<(DraftTarget, DraftContent), crate::request::Invalid> {
        use crate::request::Invalid;
        let target = match (self.account_id, self.thread_id) {
            (Some(account_id), None) => DraftTarget::Account(account_id.into()),
            (None, Some(thread_id)) => DraftTarget::Thread(thread_id.into()),
            _ => {
                return Err(Invalid::new(
                    "account_id",
                    "give exactly one of account_id and thread_id",
                ));
            }
        };
        Ok((target, checked(self.to, self.cc, self.subject, self.body)?))
    }
}

impl SaveDraft {
    /// The content, checked.
    pub fn checked(self) -> Result<(u32, DraftContent), crate::request::Invalid> {
        Ok((
            self.expected_revision,
            checked(self.to, self.cc, self.subject, self.body)?,
        ))
    }
}

/// Where a new draft goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DraftTarget {
    Account(domain::ids::AccountId),
    Thread(domain::ids::ThreadId),
}

/// `POST /v1/email/threads/{thread_id}/feedback`: what the owner says, and what it applies to:
/// this conversation, one person (`person`, one of its senders, chosen explicitly), or its kind
/// of content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GiveFeedback {
    pub scope: FeedbackScope,
    pub signal: FeedbackSignal,
    /// Required with `scope: person`, refused otherwise.
    #[schema(min_length = 3, max_length = 320)]
    pub person: Option<String>,
}

impl GiveFeedback {
    /// The person named exactly when the scope is a person.
    pub fn checked(self) -> Result<(FeedbackScope, FeedbackSignal, Option<String>), crate::request::Invalid> {
        use crate::request::Invalid;
        match (self.scope, self.person) {
            (FeedbackScope::Person, Some(person)) if plausible_address(&person) => {
                Ok((self.scope, self.signal, Some(person.to_lowercase())))
            }
            (FeedbackScope::Person, Some(_)) => Err(Invalid::new("person", "not an email address")),
            (FeedbackScope::Person, None) => Err(Invalid::new("person", "a person's feedback names the person")),
            (_, Some(_)) => Err(Invalid::new("person", "only a person's feedback names a person")),
            (scope, None) => Ok((scope, self.signal, None)),
        }
    }
}

/// One piece of feedback: a rule while it is in force.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Feedback {
    pub feedback_id: Uuid,
    pub scope: FeedbackScope,
    pub signal: FeedbackSignal,
    /// The conversation it was given on.
    pub thread_id: Uuid,
    pub person: Option<String>,
    pub kind: Option<ContentKind>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    /// Undone, reset, or retired by an exclusion: it applies nowhere.
    pub retired: bool,
}

/// Feedback given or undone, with the conversation as it now shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FeedbackAnswer {
    /// The rule, whose `scope` is the scope applied.
    pub feedback: Feedback,
    pub thread: EmailThreadSummary,
}

/// A source never used for learning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LearningExclusion {
    pub exclusion_id: Uuid,
    pub kind: ExclusionKind,
    pub value: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
}

/// `GET /v1/email/learning`: the learning controls and what was learnt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Learning {
    /// While paused no person or kind rule forms and no wording is endorsed; rules in force
    /// still apply.
    pub paused: bool,
    pub exclusions: Vec<LearningExclusion>,
    /// Person and kind rules in force, newest first.
    pub rules: Vec<Feedback>,
    /// Passages of wording endorsed as the owner's writing style, in force.
    pub style_samples: u32,
}

/// `PUT /v1/email/learning`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetLearning {
    pub paused: bool,
}

/// What a reset forgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResetScope {
    Person,
    Kind,
    /// Every person and kind rule, and the endorsed writing style.
    Everything,
}

/// `POST /v1/email/learning/reset`: `person` with `scope: person`, `kind` with `scope: kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetLearning {
    pub scope: ResetScope,
    #[schema(min_length = 3, max_length = 320)]
    pub person: Option<String>,
    pub kind: Option<ContentKind>,
}

/// A reset, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reset {
    Person(String),
    Kind(ContentKind),
    Everything,
}

impl ResetLearning {
    pub fn checked(self) -> Result<Reset, crate::request::Invalid> {
        use crate::request::Invalid;
        match (self.scope, self.person, self.kind) {
            (ResetScope::Person, Some(person), None) if plausible_address(&person) => {
                Ok(Reset::Person(person.to_lowercase()))
            }
            (ResetScope::Person, _, None) => Err(Invalid::new("person", "a person's reset names an email address")),
            (ResetScope::Kind, None, Some(kind)) => Ok(Reset::Kind(kind)),
            (ResetScope::Kind, None, None) => Err(Invalid::new("kind", "a kind's reset names the kind")),
            (ResetScope::Everything, None, None) => Ok(Reset::Everything),
            (_, Some(_), _) => Err(Invalid::new("person", "only a person's reset names a person")),
            (_, _, Some(_)) => Err(Invalid::new("kind", "only a kind's reset names a kind")),
        }
    }
}

/// What a reset retired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResetAnswer {
    pub retired: u32,
}

/// `POST /v1/email/learning/exclusions`: a sender's address or a provider label id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExcludeSource {
    pub kind: ExclusionKind,
    #[schema(min_length = 1, max_length = 320)]
    pub value: String,
}

impl ExcludeSource {
    /// An address lowercased; a label as given.
    pub fn checked(self) -> Result<(ExclusionKind, String), crate::request::Invalid> {
        use crate::request::Invalid;
        match self.kind {
            ExclusionKind::Sender if plausible_address(&self.value) => Ok((self.kind, self.value.to_lowercase())),
            ExclusionKind::Sender => Err(Invalid::new("value", "not an email address")),
            ExclusionKind::Label
                if !self.value.is_empty()
                    && self.value.chars().count() <= 320
                    && !self.value.chars().any(|c| c.is_whitespace() || c.is_control()) =>
            {
                Ok((self.kind, self.value))
            }
            ExclusionKind::Label => Err(Invalid::new("value", "a label id: 1 to 320 characters, no spaces")),
        }
    }
}

/// The most wording one endorsement keeps, in characters.
pub const MAX_STYLE_CHARS: usize = 2000;

/// `POST /v1/email/drafts/{draft_id}/style`: endorse `text`, shown in the saved revision
/// `revision` (which must be the newest), as the owner's writing style.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndorseStyle {
    #[serde(deserialize_with = "crate::request::whole")]
    #[schema(minimum = 1)]
    pub revision: u32,
    #[schema(min_length = 1, max_length = 2000)]
    pub text: String,
}

/// Wording endorsed as the owner's style.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StyleSample {
    pub sample_id: Uuid,
    pub draft_id: Uuid,
    pub revision: u32,
    pub text: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
}
