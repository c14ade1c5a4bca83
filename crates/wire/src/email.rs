//! Email mode's `/v1/email` wire format: accounts with their freshness and coverage, the inbox
//! listings, a thread's reading pane, and the durable operations that refresh a mailbox or change
//! a conversation in it.

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
    /// Why new mail waits unassessed: `daily_allowance_spent` or `monthly_allowance_spent`.
    pub waiting: Option<String>,
    /// Whether unsubscribe assistance is offered for this account.
    pub unsubscribe_supported: bool,
    /// Whether Report spam, Not spam and the suspected-spam flag are offered.
    pub spam_supported: bool,
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

/// Which listing of the inbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InboxView {
    /// The priority inbox: in the Inbox and assessed important; needs a reply first, then for
    /// your attention, then the rest, newest first.
    #[default]
    Important,
    /// Everything else (unassessed, other, archived, spam), newest first.
    Other,
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
    /// The `next_cursor` of the previous page of the same view.
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Importance {
    Important,
    Other,
}

/// A conversation as a row of the inbox shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmailThreadSummary {
    pub thread_id: Uuid,
    pub account_id: String,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmailOperationKind {
    Refresh,
    Archive,
    MoveToInbox,
    ReportSpam,
    NotSpam,
}

/// An operation's state: it settles to `succeeded`, `failed` or `uncertain`. An uncertain write
/// is never repeated; reading the conversation settles it later (`reconciled_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmailOperationState {
    Queued,
    Dispatching,
    Succeeded,
    Failed,
    Uncertain,
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
}

/// `POST /v1/email/accounts/{account_id}/refresh`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RefreshAnswer {
    /// False when a refresh of the account was admitted within the last 60 seconds: `operation`
    /// is that one, and no new one was made.
    pub admitted: bool,
    pub operation: EmailOperation,
}
