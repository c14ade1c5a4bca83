// Generated from the OpenAPI document's schemas by crates/api/tests/it/web_types.rs; do not edit.
// Regenerate: STEWARD_UPDATE_WEB_TYPES=1 cargo xtask test -p api -- web_types

/** `POST /v1/sessions/{session_id}/messages`: the run the message started. */
export type Accepted = {
  run: Run;
};

/** What accepting a proposal did. */
export type AcceptedFolderProposal = {
  /**
   * The folder the conversations are now in (made by this acceptance for a new-folder
   * proposal).
   */
  folder: Folder;
  proposal_id: string;
  /** The conversations this acceptance filed. */
  session_ids: string[];
};

/** Why an account's new mail waits unassessed. */
export type AllowanceWait = "daily_allowance_spent" | "monthly_allowance_spent";

/** `POST /v1/runs/{run_id}/input`. */
export type AnswerQuestion = {
  /** The id of the question the client displayed. */
  question_id: string;
  text: string;
};

export type Approval = {
  approval_id: string;
  approved_for?: null | ApprovedFor;
  /** JSON Pointer of each truncated string → hex SHA-256 of its full value. */
  argument_digests: Record<string, string>;
  /** The arguments, whole except strings over 512 characters, which are truncated. */
  arguments: Record<string, unknown>;
  created_at: string;
  decided_at?: string | null;
  invocation_id: string;
  risk: Risk;
  run_id: string;
  session_id: string;
  status: ApprovalStatus;
  task_offer?: null | TaskOffer;
  task_permission_id?: string | null;
  tool: string;
};

export type ApprovalList = {
  approvals: Approval[];
};

export type ApprovalRequested = {
  approval_id: string;
  approved_for?: null | ApprovedFor;
  /** JSON pointer of each truncated string → lowercase hex SHA-256 of the whole string. */
  argument_digests: Record<string, string>;
  /** The arguments as shown: strings over 512 characters truncated. */
  arguments: Record<string, unknown>;
  invocation_id: string;
  risk: Risk;
  run_id: string;
  status: ApprovalStatus;
  task_offer?: null | TaskOffer;
  task_permission_id?: string | null;
  tool: string;
};

export type ApprovalResolved = {
  approval_id: string;
  approved_for?: null | ApprovedFor;
  invocation_id: string;
  run_id: string;
  status: ApprovalStatus;
  task_permission_id?: string | null;
  tool: string;
};

/**
 * An approval's status. The vocabulary is closed: `PENDING` until decided; `APPROVED` or
 * `DENIED` by the owner; `CANCELLED` when the run was cancelled first; `EXPIRED` when the run's
 * deadline passed first. Only `PENDING` ever changes, and only once.
 */
export type ApprovalStatus = "PENDING" | "APPROVED" | "DENIED" | "CANCELLED" | "EXPIRED";

/** How an approved browser action was allowed. */
export type ApprovedFor = "once" | "task";

export type Artifact = {
  artifact_id: string;
  created_at: string;
  /** The strong entity tag the content route serves. */
  etag: string;
  /**
   * When retention removed the bytes (`ARTIFACT_RETENTION_DAYS` after the upload); from then
   * on the content route answers 410 `artifact_expired`. Null while the bytes are kept.
   */
  expired_at?: string | null;
  filename: string;
  /** The media type given at upload. */
  media_type: string;
  session_id: string;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  size_bytes: number;
};

export type AssistantMessage = {
  run_id: string;
  /** The run's step number, from 1. */
  step: number;
  text: string;
  tool_calls: ToolCall[];
  usage: StepUsage;
};

/** An artifact attached to a message, as it was when the message was sent. */
export type Attachment = {
  artifact_id: string;
  filename: string;
  media_type: string;
  size_bytes: number;
};

/** An attachment's metadata; its bytes are never stored or served. */
export type AttachmentMeta = {
  filename?: string | null;
  media_type: string;
  size_bytes: number;
};

/** A ceremony to begin. */
export type BeginCeremony = {
  kind: CeremonyKind;
  /** `remote` only: the site's login page, an address on one of the profile's origins. */
  login_url?: string | null;
};

/** A ceremony as it began: the capability or link is in this answer only. */
export type BegunCeremony = {
  /**
   * `device`: the single-use capability to present, as `Authorization: Bearer`, with the
   * session at `handoff_url` (never the API credential there).
   */
  capability?: string | null;
  ceremony_id: string;
  /** `remote`: the five-minute, single-use link `Continue in web browser` opens. */
  continue_url?: string | null;
  expires_at: string;
  /** `device`: where the session goes, once. */
  handoff_url?: string | null;
  kind: CeremonyKind;
  profile_id: string;
  state: CeremonyState;
};

/** A browser profile. */
export type BrowserProfile = {
  /** Every origin the profile's browser may reach, the primary one first. */
  allowedOrigins: string[];
  created_at: string;
  /** The exact public HTTPS origin the profile signs in to. */
  primary_origin: string;
  profile_id: string;
  ready_at?: string | null;
  revoked_at?: string | null;
  state: ProfileState;
};

/** `GET /v1/browser/profiles`. */
export type BrowserProfileList = {
  /** Newest first, revoked ones included. */
  profiles: BrowserProfile[];
};

export type Cadence = {
  kind: CadenceKind;
  /** The local wall time of each firing, `HH:MM:SS`. */
  local_time: string;
  /** An IANA time zone such as `Europe/London` (the served document lists them). */
  timezone: string;
};

export type CadenceKind = "DAILY";

/** `GET /v1/calls/{call_id}`: the call with its brief, transcript and summary. */
export type Call = {
  /** `human`, `voicemail`, `no-answer`, … as the provider reported. */
  answered_by?: string | null;
  brief?: null | CallBrief;
  call: CallSummary;
  revision?: string | null;
  /** Outbound: the conversation the brief was approved in. */
  session_id?: string | null;
  summary?: string | null;
  /** What was said; none until the call ends, and none once expired. */
  transcript?: TranscriptTurn[] | null;
};

/** An outbound call's brief, word for word as approved. */
export type CallBrief = {
  may_say: string;
  purpose: string;
  to: string;
  voicemail_message?: string | null;
};

/** Which way a call went. */
export type CallDirection = "inbound" | "outbound";

/** Why an outbound call was not placed, or was settled without its result. */
export type CallFailure = "refused" | "revision_changed" | "configuration_missing" | "brief_invalid" | "not_found_at_provider" | "result_unavailable";

/** `GET /v1/calls`: newest first. */
export type CallPage = {
  calls: CallSummary[];
  next_cursor?: string | null;
};

/** Where a call is (`migrations/0027_calls.sql` describes each state). */
export type CallState = "approved" | "dispatching" | "uncertain" | "dispatched" | "finished" | "not_placed" | "cancelled";

/** A call in the list. */
export type CallSummary = {
  call_id: string;
  /** The other party's number (E.164); none once the call was deleted. */
  counterpart?: string | null;
  /**
   * When the record was made: the approval of an outbound brief, or the inbound call's
   * settlement.
   */
  created_at: string;
  direction: CallDirection;
  dispatched_at?: string | null;
  duration_seconds?: number | null;
  /** The transcript and summary were removed 30 days after the call ended. */
  expired: boolean;
  failure?: null | CallFailure;
  finished_at?: string | null;
  state: CallState;
};

/** Why a run was cancelled. */
export type CancelReason = "requested" | "deadline" | "draft_changed";

/** How a ceremony's session arrives. */
export type CeremonyKind = "device" | "remote";

/** Where a ceremony stands. */
export type CeremonyState = "open" | "active" | "completed" | "rejected" | "expired" | "cancelled";

/** `GET /v1/browser/ceremonies/{id}`: secret-free. */
export type CeremonyStatus = {
  ceremony_id: string;
  expires_at: string;
  kind: CeremonyKind;
  profile_id: string;
  profile_state?: null | ProfileState;
  state: CeremonyState;
};

/** How a person is reached. */
export type ContactKind = "email" | "phone";

/** A contact named in a repair. */
export type ContactRef = {
  kind: ContactKind;
  value: string;
};

/** What kind of content a message is. */
export type ContentKind = "bulk" | "transactional" | "personal";

/**
 * `PUT /v1/people/{person_id}/facts/{fact_id}/correction`: the owner's correction, or `null`
 * to take it back.
 */
export type CorrectFact = {
  /** 1 to 300 characters on one line; `null` takes the correction back. */
  correction: string | null;
};

/** A correspondent: an address and the display name it came with. */
export type Correspondent = {
  address: string;
  name?: string | null;
};

/**
 * `POST /v1/browser/profiles`: a new profile and its first ceremony, made together (a
 * ceremony that cannot begin leaves no profile).
 */
export type CreateBrowserProfile = {
  /** More exact public HTTPS origins the sign-in or the site uses. */
  additional_origins?: string[];
  ceremony: BeginCeremony;
  /** An exact public HTTPS origin (`https://example.com`, no path). */
  primary_origin: string;
};

/**
 * `POST /v1/email/drafts`: a new message from `account_id`, or a reply in `thread_id`
 * (exactly one of the two). Saving a draft is not a mailbox write.
 */
export type CreateDraft = {
  account_id?: string | null;
  body?: string;
  cc?: string[];
  subject?: string;
  thread_id?: string | null;
  to?: string[];
};

/** `POST /v1/sessions`. */
export type CreateSession = {
  /** A configured agent (the document lists them). */
  agent_id: string;
  /**
   * The `READY` browser profile the agent may act on (`browser.act`), with Website Access on;
   * checked again by the server (the owner's, and ready).
   */
  browser_profile_id?: string;
  /**
   * Free-form client metadata: a JSON object of at most 16 KiB, strings without U+0000,
   * numbers within ±(2^53 − 1). A string `title` member becomes the session's initial title.
   */
  metadata?: Record<string, unknown>;
};

/** `POST /v1/browser/profiles` answer. */
export type CreatedBrowserProfile = {
  ceremony: BegunCeremony;
  profile: BrowserProfile;
};

/** `POST /v1/approvals/{approval_id}/decision`. */
export type DecideApproval = {
  decision: Decision;
};

/** The owner's decision on an approval. */
export type Decision = "approve_once" | "deny" | "allow_for_task";

export type Delta = {
  run_id: string;
  text: string;
};

export type Device = {
  active: boolean;
  client_device_id: string;
  created_at: string;
  device_id: string;
  environment?: null | PushEnvironment;
  kind: DeviceKind;
  updated_at: string;
};

/** How a device receives pushes. */
export type DeviceKind = "apns" | "web_push";

/** A draft and its newest revision. */
export type Draft = DraftRevision & ({
  account_id: string;
  created_at: string;
  draft_id: string;
  send?: null | DraftSend;
  /** The conversation it replies in; null for a new message. */
  thread_id?: string | null;
});

/** Who wrote a draft's revision. */
export type DraftAuthor = "owner" | "agent";

/** What a revision holds. */
export type DraftContent = {
  body: string;
  cc: string[];
  subject: string;
  to: string[];
};

/** `GET /v1/email/drafts/{draft_id}/revisions`: every revision, oldest first. */
export type DraftHistory = {
  draft_id: string;
  revisions: DraftRevision[];
};

/** One saved version of a draft. */
export type DraftRevision = DraftContent & ({
  author: DraftAuthor;
  /** The revision this one restores. */
  restored_from?: number | null;
  revision: number;
  saved_at: string;
});

/** A draft's newest freeze: the revision it froze, the approval that sends exactly it, and its state. */
export type DraftSend = {
  approval?: null | Approval;
  /**
   * Why it was not sent (`approval.denied`, `draft_changed`, `deadline`, a mail code), or
   * `mail.outcome_unknown`.
   */
  code?: string | null;
  /** The frozen revision. */
  revision: number;
  /** The run that sends it, in the draft's own send session. */
  run_id: string;
  session_id: string;
  state: SendState;
};

/** Two records that may be one person. */
export type DuplicatePair = {
  first: Person;
  second: Person;
};

/**
 * `GET /v1/people/duplicates`: records that may be one person (the same name), never a pair
 * the owner told apart; at most 50.
 */
export type Duplicates = {
  pairs: DuplicatePair[];
};

/** A connected mail account as Email mode keeps it. */
export type EmailAccount = {
  account_id: string;
  /** The mailbox's address, once the first update has read it. */
  address?: string | null;
  /** The historical coverage: mail from this time on is in the projection. */
  coverage_from?: string | null;
  /** `pending` until the first update completes, then `current`. */
  freshness: Freshness;
  /**
   * The junk first pass on this account: the configured mode, the mode in force and why
   * they differ.
   */
  junk_filter: JunkFilterStanding;
  /** The last update's failure, a stable code; cleared by the next completed update. */
  last_error?: string | null;
  last_error_at?: string | null;
  /**
   * The tool a Review & Send from this account asks approval for
   * (`mcp.mail_send.send_message` for the default account, `mcp.mail_<id>_send.send_message`
   * for another); null when this server cannot send from it.
   */
  send_tool?: string | null;
  /** Whether Report spam, Not spam and the suspected-spam flag are offered. */
  spam_supported: boolean;
  /** Whether unsubscribe assistance is offered for this account. */
  unsubscribe_supported: boolean;
  /** When the last update completed (null while the first is awaited). */
  updated_at?: string | null;
  waiting?: null | AllowanceWait;
};

/** `GET /v1/email/accounts`. */
export type EmailAccountList = {
  accounts: EmailAccount[];
};

/** One message of the reading pane: plain text (HTML reduced to text, no remote content). */
export type EmailMessage = {
  attachments: AttachmentMeta[];
  cc: Correspondent[];
  from?: null | Correspondent;
  message_id: string;
  sent_at: string;
  subject: string;
  text: string;
  /** The text was cut at 100,000 characters. */
  text_cut: boolean;
  to: Correspondent[];
};

/** A durable mailbox operation. */
export type EmailOperation = {
  account_id: string;
  created_at: string;
  /** A proposed reply's draft; null for other operations. */
  draft_id?: string | null;
  /** A stable code when it failed or was left uncertain (`mail.outcome_unknown`). */
  error?: string | null;
  kind: EmailOperationKind;
  operation_id: string;
  /** When an uncertain write was settled by reading the conversation. */
  reconciled_at?: string | null;
  state: EmailOperationState;
  /**
   * An unsubscribe command's senders, in order, each with its own outcome; empty for other
   * operations.
   */
  targets?: UnsubscribeTargetStatus[];
  /** The conversation a write changes; null for a refresh. */
  thread_id?: string | null;
  updated_at: string;
};

/** A durable mailbox operation's kind. */
export type EmailOperationKind = "refresh" | "archive" | "move_to_inbox" | "report_spam" | "not_spam" | "propose_reply" | "unsubscribe";

/**
 * An operation's state: it settles to `succeeded`, `failed` or `uncertain`. An uncertain
 * write is never repeated; reading the conversation settles it later (`reconciled_at`).
 */
export type EmailOperationState = "queued" | "dispatching" | "succeeded" | "failed" | "uncertain";

/** `GET /v1/email/threads/{thread_id}`: the row and its messages, oldest first. */
export type EmailThread = EmailThreadSummary & ({
  messages: EmailMessage[];
  subscription?: null | Subscription;
});

/** One page of a listing. */
export type EmailThreadPage = {
  /** Present while more rows follow; pass it back as `cursor` with the same view. */
  next_cursor?: string | null;
  threads: EmailThreadSummary[];
};

/** A conversation as a row of the inbox shows it. */
export type EmailThreadSummary = {
  account_id: string;
  /** The classifier version that assessed it (`jev-1.13.0`). */
  classifier?: string | null;
  /** Each sender once, in order of first message. */
  correspondents: Correspondent[];
  /** The conversation's newest draft (`/v1/email/drafts/{draft_id}`), if any. */
  draft_id?: string | null;
  /** A one-line gist of the newest message (untrusted mail content, shown as text). */
  gist?: string | null;
  has_attachments: boolean;
  importance?: null | Importance;
  junk?: null | JunkExplanation;
  kind?: null | ContentKind;
  /** The newest message's date. */
  latest_at: string;
  message_count: number;
  place: MailboxPlace;
  /** The provider's id of the conversation (a reply's approval names it as `thread_id`). */
  provider_thread_id: string;
  /**
   * The owner's feedback that decided what the row shows instead of the classifier (its
   * importance, its reply need, or both): the row's reason.
   */
  reasons: Feedback[];
  state?: null | ThreadState;
  subject: string;
  /** The server flags it as suspected spam (cleared by `POST …/spam-flag`). */
  suspected_spam: boolean;
  thread_id: string;
};

/**
 * `POST /v1/email/drafts/{draft_id}/style`: endorse `text`, shown in the saved revision
 * `revision` (which must be the newest), as the owner's writing style.
 */
export type EndorseStyle = {
  revision: number;
  text: string;
};

/** One persisted event: its kind and typed payload. */
export type Event = {
  kind: "user.message.created";
  /** The owner's message (or a schedule's instruction) that starts a run. */
  payload: UserMessageCreated;
} | {
  kind: "assistant.message";
  /** One model step: its text and the tool calls it asked for. */
  payload: AssistantMessage;
} | {
  kind: "tool.started";
  /** A side-effecting tool call is being dispatched (committed before the call). */
  payload: ToolStarted;
} | {
  kind: "tool.result";
  /** A tool call settled. */
  payload: ToolResult;
} | {
  kind: "approval.requested";
  /** The run waits for the owner's decision on a tool call. */
  payload: ApprovalRequested;
} | {
  kind: "approval.resolved";
  /** The owner decided. */
  payload: ApprovalResolved;
} | {
  kind: "question.asked";
  /** The run waits for the owner's answer. */
  payload: QuestionAsked;
} | {
  kind: "question.answered";
  /** The owner answered. */
  payload: QuestionAnswered;
} | {
  kind: "run.completed";
  /** The run ended `completed`. */
  payload: RunCompleted;
} | {
  kind: "run.failed";
  /** The run ended `failed`. */
  payload: RunFailed;
} | {
  kind: "run.cancelled";
  /** The run ended `cancelled`. */
  payload: RunCancelled;
} | {
  kind: "mail.outcome_unknown";
  /** A mail write or send whose outcome is unknown; it will be reconciled, never repeated. */
  payload: MailOutcomeUnknown;
} | {
  kind: "mail.reconciled";
  /** The reconciliation of a mail write or send settled. */
  payload: MailReconciled;
};

/** An action a task permission never covers: each one is approved on its own. */
export type Exception = "purchase" | "sign_out";

/** `POST /v1/email/learning/exclusions`: a sender's address or a provider label id. */
export type ExcludeSource = {
  kind: ExclusionKind;
  value: string;
};

/** A learning exclusion's kind: a sender's address, or a provider label id. */
export type ExclusionKind = "sender" | "label";

/**
 * Where a fact came from: a message (of a mail thread), a conversation's run, or the owner
 * (references only; a source the owner deleted shows as none).
 */
export type FactEvidence = {
  email_thread_id?: string | null;
  provider_message_id?: string | null;
  run_id?: string | null;
  session_id?: string | null;
};

/** Where a fact about a person came from. */
export type FactSource = "email" | "conversation" | "owner";

/** One piece of feedback: a rule while it is in force. */
export type Feedback = {
  created_at: string;
  feedback_id: string;
  kind?: null | ContentKind;
  person?: string | null;
  /** Undone, reset, or retired by an exclusion: it applies nowhere. */
  retired: boolean;
  scope: FeedbackScope;
  signal: FeedbackSignal;
  /** The conversation it was given on. */
  thread_id: string;
};

/** Feedback given or undone, with the conversation as it now shows. */
export type FeedbackAnswer = {
  /** The rule, whose `scope` is the scope applied. */
  feedback: Feedback;
  thread: EmailThreadSummary;
};

/** What a piece of feedback applies to. */
export type FeedbackScope = "thread" | "person" | "kind";

/** What the owner says. */
export type FeedbackSignal = "important" | "less_important" | "needs_reply" | "no_reply";

export type Folder = {
  created_at: string;
  folder_id: string;
  name: string;
  updated_at: string;
};

export type FolderList = {
  /** Every folder, oldest first. */
  folders: Folder[];
};

/** `POST /v1/folders` and `PATCH /v1/folders/{folder_id}`. */
export type FolderName = {
  /**
   * Up to 100 characters, no control characters, not blank; stored trimmed, unique per owner
   * ignoring case.
   */
  name: string;
};

/**
 * A proposal, made by the agent, to file conversations into a folder. Nothing is filed until
 * the owner accepts it.
 */
export type FolderProposal = {
  created_at: string;
  /**
   * The existing folder it would file into; null when accepting makes a new folder named
   * `name`.
   */
  folder_id?: string | null;
  /** The existing folder's current name, or the proposed new folder's name. */
  name: string;
  proposal_id: string;
  /**
   * The conversations it would file that are still unfiled, in index order (never empty,
   * never a scheduled session).
   */
  session_ids: string[];
};

/**
 * `POST /v1/folder-proposals/{proposal_id}/accept`: optional; `name` renames a proposed new
 * folder (the same rules as a folder's name) and is refused for a proposal of an existing one.
 */
export type FolderProposalAcceptance = {
  name?: string | null;
};

export type FolderProposalList = {
  /**
   * Every proposal waiting for the owner that can still file something, oldest first (at
   * most 20).
   */
  proposals: FolderProposal[];
};

/** A persisted event as the stream sends it: the `data` of a frame whose SSE `id` is `seq`. */
export type Frame = Event & ({
  created_at: string;
  /** The run the event belongs to. */
  run_id?: string | null;
  /** The event's position in its session, contiguous from 1; also the SSE `id`. */
  seq: number;
});

export type Freshness = "pending" | "current";

/**
 * `POST /v1/email/threads/{thread_id}/feedback`: what the owner says, and what it applies to:
 * this conversation, one person (`person`, one of its senders, chosen explicitly), or its kind
 * of content.
 */
export type GiveFeedback = {
  /** Required with `scope: person`, refused otherwise. */
  person?: string | null;
  scope: FeedbackScope;
  signal: FeedbackSignal;
};

/** Where an import stands. */
export type ImportState = "queued" | "running" | "completed" | "cancelled" | "failed";

/** What the classifier says of a conversation's importance. */
export type Importance = "important" | "other";

/** Which listing of the inbox. */
export type InboxView = "important" | "other";

/**
 * Where one tool invocation is. `dispatching` is written (and committed) before a
 * side-effecting tool is called; an invocation found still `dispatching` after a crash becomes
 * `outcome_unknown` and is never retried.
 */
export type InvocationState = "queued" | "awaiting_approval" | "awaiting_answer" | "approved" | "denied" | "dispatching" | "succeeded" | "failed" | "outcome_unknown" | "cancelled";

/** What a judgment says a message is. */
export type JunkCategory = "spam" | "bulk" | "keep";

/** Why the junk first pass keeps a conversation out of the priority inbox (in Other mail). */
export type JunkExplanation = {
  /**
   * `spam` (the conversation also carries the suspected-spam flag) or `bulk` (never
   * marked as spam).
   */
  category: JunkCategory;
  /** The sentence the row shows. */
  explanation: string;
  /** Which mode kept it out: `filter` or `pilot`. */
  mode: JunkMode;
  /** The judgment's probability, from 0.99 to 1. */
  probability: number;
};

/** The junk first pass on an account. */
export type JunkFilterStanding = {
  in_force?: null | JunkMode;
  /** `AGENT_EMAIL_JUNK_FILTER_MODE` as configured. */
  mode: JunkMode;
  reason?: null | JunkReason;
};

/** The configured mode (`AGENT_EMAIL_JUNK_FILTER_MODE`), and the mode in force. */
export type JunkMode = "off" | "shadow" | "filter" | "pilot";

/** Why the configured mode is not the one in force. */
export type JunkReason = "packet_missing" | "packet_invalid" | "packet_mismatched" | "packet_expired" | "floor_not_met" | "not_pilot_account";

/** `GET /v1/email/learning`: the learning controls and what was learnt. */
export type Learning = {
  exclusions: LearningExclusion[];
  /**
   * While paused no person or kind rule forms and no wording is endorsed; rules in force
   * still apply.
   */
  paused: boolean;
  /** Person and kind rules in force, newest first. */
  rules: Feedback[];
  /** Passages of wording endorsed as the owner's writing style, in force. */
  style_samples: number;
};

/** A source never used for learning. */
export type LearningExclusion = {
  created_at: string;
  exclusion_id: string;
  kind: ExclusionKind;
  value: string;
};

export type MailOutcomeUnknown = {
  account_id: string;
  call_id: string;
  /** Always `mail.outcome_unknown`. */
  code: string;
  invocation_id: string;
  /** `create_draft` or `send_message`. */
  operation: string;
  run_id: string;
  tool: string;
};

export type MailReconciled = {
  account_id: string;
  call_id?: string | null;
  invocation_id: string;
  /** `create_draft` or `send_message`. */
  operation: string;
  run_id: string;
  state: ReconciliationOutcome;
  /** The provider thread of the message found. */
  thread_id?: string | null;
  tool?: string | null;
};

/** Where a conversation is in its mailbox. */
export type MailboxPlace = "inbox" | "archived" | "spam";

/** A belief. */
export type Memory = {
  formed_at: string;
  kind: MemoryKind;
  memory_id: string;
  /** Flagged for review: not recalled until the owner marks it reviewed. */
  needs_review: boolean;
  /** What it was formed from. */
  origin: MemoryOrigin;
  /** When the owner marked it reviewed or not true. */
  reviewed_at?: string | null;
  /** The belief, one short statement. */
  statement: string;
  status: MemoryStatus;
};

/**
 * A belief with its evidence (oldest first) and the runs that recalled it (newest first; at
 * most 50 of each).
 */
export type MemoryDetail = {
  evidence: MemoryEvidence[];
  memory: Memory;
  recalls: MemoryRecall[];
};

/**
 * One piece of a belief's evidence: a conversation's run, or a message of a mail thread
 * (references only; a source the owner deleted shows as none).
 */
export type MemoryEvidence = {
  email_thread_id?: string | null;
  noted_at: string;
  provider_message_id?: string | null;
  run_id?: string | null;
  session_id?: string | null;
};

/** What a belief is about. */
export type MemoryKind = "fact" | "preference" | "relationship" | "commitment" | "routine";

/** What a belief was formed from. */
export type MemoryOrigin = "conversation" | "email";

/** A page of beliefs, newest first. */
export type MemoryPage = {
  memories: Memory[];
  /** Present while more beliefs follow. */
  next_cursor?: string | null;
};

/** A run whose prompt received a belief. */
export type MemoryRecall = {
  /** Its place among the beliefs that run received (1 first). */
  rank: number;
  recalled_at: string;
  run_id: string;
  session_id: string;
};

/** Where a belief stands with the owner. */
export type MemoryStatus = "active" | "reviewed" | "not_true";

/** `GET /v1/settings/models` and the answer to saving them. */
export type ModelSettings = {
  chat_model: string;
  chat_reasoning_effort: string;
  memory_model: string;
  memory_reasoning_effort: string;
  /** The combinations the server offers: `{"chat": [{"model", "reasoning_efforts"}], "memory": [...]}`. */
  offered: Record<string, unknown>;
};

/** A pending notification (`GET /v1/notifications`). */
export type Notification = {
  created_at: string;
  kind: NotificationKind;
  notification_id: string;
  /** The closed version-1 tap dictionary, the same as in the push payload: kind and ids only. */
  payload: TapPayload;
};

/** What a notification is about. */
export type NotificationKind = "approval" | "question" | "schedule_outcome" | "call_finished";

export type NotificationList = {
  notifications: Notification[];
};

export type Occurrence = {
  created_at: string;
  occurrence_id: string;
  /** Why it was skipped or failed (e.g. `misfire`, `schedule.authorization_failed`). */
  reason?: string | null;
  /** The run it started. */
  run_id?: string | null;
  /** The schedule revision that fired. */
  schedule_revision: number;
  scheduled_for: string;
  session_id?: string | null;
  state: OccurrenceState;
};

export type OccurrenceList = {
  occurrences: Occurrence[];
};

/** What became of one firing of a schedule. */
export type OccurrenceState = "started" | "skipped" | "completed" | "failed" | "cancelled";

/** A conversation with a person waiting for the owner's reply. */
export type OpenThread = {
  email_thread_id: string;
  latest_at: string;
  subject: string;
};

/**
 * `POST /v1/people/{person_id}/merge` (the person kept) and
 * `POST /v1/people/{person_id}/not-the-same`.
 */
export type OtherPerson = {
  other_person_id: string;
};

/** A named collection of people. */
export type PeopleCollection = "pinned" | "needs_review";

/** An import of history and its progress. */
export type PeopleImport = {
  /** Beliefs formed from the owner's sent mail (each flagged for review). */
  beliefs_formed: number;
  created_at: string;
  /** Facts about senders noted. */
  facts_noted: number;
  finished_at?: string | null;
  import_id: string;
  people_created: number;
  record_limit: number;
  /** Messages read so far. */
  records_read: number;
  /** The import's own session (outside the session index). */
  session_id: string;
  since: string;
  /** USD, a decimal. */
  spending_cap: string;
  /** What the memory model cost so far, USD as a decimal. */
  spent: string;
  state: ImportState;
  /**
   * Why it ended: `range_read`, `record_limit`, `spending_cap`, `cancelled`, or a failure's
   * code; null while it runs.
   */
  stop_reason?: string | null;
  until: string;
  updated_at: string;
};

/** The owner's latest imports, newest first. */
export type PeopleImports = {
  imports: PeopleImport[];
};

/** A page of people, newest first. */
export type PeoplePage = {
  /** Present while more people follow. */
  next_cursor?: string | null;
  people: Person[];
};

/** A person. */
export type Person = {
  created_at: string;
  name: string;
  /** Gathered from mail and not reviewed by the owner yet. */
  needs_review: boolean;
  person_id: string;
  pinned: boolean;
  /** How they relate to the owner (`sister`), when known. */
  relationship?: string | null;
  updated_at: string;
};

/** How a person is reached. */
export type PersonContact = {
  first_seen: string;
  kind: ContactKind;
  last_seen: string;
  /** The display name it was last seen with. */
  name_seen?: string | null;
  /** An address in lower case, or a number as `+` and digits. */
  value: string;
};

/** A fact about a person. */
export type PersonFact = {
  corrected_at?: string | null;
  /** The owner's correction: shown instead of the statement. */
  correction?: string | null;
  evidence: FactEvidence;
  fact_id: string;
  noted_at: string;
  source: FactSource;
  /** What was learned, as it was learned. */
  statement: string;
};

/**
 * A person's profile: the names they go by (theirs first, then the names their contacts were
 * seen with), contacts, facts (oldest first), the latest 20 messages of their timeline (newest
 * first) and their open threads.
 */
export type PersonProfile = {
  contacts: PersonContact[];
  facts: PersonFact[];
  names: string[];
  open_threads: OpenThread[];
  person: Person;
  timeline: TimelineEntry[];
};

export type PolicyProfile = "default";

/**
 * An error answer. `code` is the stable member clients match on; `type` carries the same code
 * as a URN; `title` is fixed per code; `detail` explains this occurrence. The other members are
 * present only with the codes that name them.
 */
export type Problem = {
  /** The stable machine-readable error code. */
  code: string;
  /** What went wrong this time, for people. */
  detail?: string | null;
  /**
   * The request member, parameter or header at fault (`validation_failed`, some
   * `invalid_request`, `unknown_artifact`, `unknown_folder`, …), e.g. `limits.max_steps`.
   */
  field?: string | null;
  local?: null | DraftContent;
  /** The largest upload allowed (`artifact_too_large`). */
  max_bytes?: number | null;
  /** The scope the route needs (`insufficient_scope`). */
  required_scope?: string | null;
  resolution?: null | ApprovalStatus;
  /** The resource's current revision (`revision_mismatch`). */
  revision?: number | null;
  /** The run that holds the session (`active_run_exists`, `session_has_active_run`). */
  run_id?: string | null;
  server?: null | Draft;
  state?: null | RunState;
  /** The HTTP status, repeated. */
  status: number;
  /** Fixed per code. */
  title: string;
  /** `urn:steward:problem:<code>`. */
  type: string;
};

/** Where a profile stands. */
export type ProfileState = "PENDING" | "READY" | "REVOKED";

/**
 * `POST /v1/email/threads/{thread_id}/proposal`: the queued proposal and the draft it lands in
 * (the conversation's draft, or a new reply to its senders).
 */
export type ProposalAnswer = {
  draft: Draft;
  operation: EmailOperation;
};

/** Which APNs environment a device's token belongs to (from the client build). */
export type PushEnvironment = "sandbox" | "production";

export type QuestionAnswered = {
  answer: string;
  question_id: string;
  run_id: string;
};

export type QuestionAsked = {
  question_id: string;
  run_id: string;
  text: string;
};

/** `GET /health/ready`. */
export type Ready = {
  /** The release identity, the same value as the `Steward-Release` header. */
  release: string;
  status: ReadyStatus;
};

export type ReadyStatus = "ready";

/** The beliefs a run's prompt received, in rank order. */
export type RecalledMemories = {
  memories: Memory[];
};

/** What a reconciliation found. */
export type ReconciliationOutcome = "found" | "not_found";

/** `POST /v1/email/accounts/{account_id}/refresh`. */
export type RefreshAnswer = {
  /**
   * False when a refresh of the account was admitted within the last 60 seconds: `operation`
   * is that one, and no new one was made.
   */
  admitted: boolean;
  operation: EmailOperation;
};

/** A refused target. */
export type RefusedTarget = {
  reason: TargetRefusal;
  subscription_id: string;
};

/** `POST /v1/devices`. */
export type RegisterDevice = {
  /** The client's own stable id for this installation. */
  client_device_id: string;
  environment: PushEnvironment;
  /** The push token, in hexadecimal. */
  push_token: string;
};

/**
 * `POST /v1/devices/web-push`: an installed web client's push subscription, as the browser's
 * `PushSubscription` gives it, registered as a device beside APNs tokens.
 */
export type RegisterWebPushDevice = {
  /** The subscription's 16-byte authentication secret (`keys.auth`), base64url without padding. */
  auth: string;
  /** The client's own stable id for this installation. */
  client_device_id: string;
  /**
   * The push service's endpoint for this subscription: an `https` URL without credentials or
   * fragment.
   */
  endpoint: string;
  /**
   * The subscription's P-256 public key (`keys.p256dh`): the uncompressed point, base64url
   * without padding.
   */
  p256dh: string;
};

/** `POST /v1/people/{person_id}/repair`: `Repair identity`. */
export type RepairIdentity = {
  action: "split";
  contacts: ContactRef[];
  name: string;
} | {
  action: "link";
  contact: ContactRef;
};

/** What a reset retired. */
export type ResetAnswer = {
  retired: number;
};

/** `POST /v1/email/learning/reset`: `person` with `scope: person`, `kind` with `scope: kind`. */
export type ResetLearning = {
  kind?: null | ContentKind;
  person?: string | null;
  scope: ResetScope;
};

/** What a reset forgets. */
export type ResetScope = "person" | "kind" | "everything";

/** `POST /v1/email/drafts/{draft_id}/revisions/{revision}/restore`. */
export type RestoreDraft = {
  expected_revision: number;
};

/**
 * `POST /v1/email/drafts/{draft_id}/review`: Review & Send the newest revision, which must be
 * `revision` (the one the owner reviewed).
 */
export type ReviewDraft = {
  revision: number;
};

/** The owner's review of a belief (`POST /v1/memories/{memory_id}/review`). */
export type ReviewMemory = {
  action: "mark_reviewed";
} | {
  action: "not_true";
} | {
  action: "not_relevant_here";
  session_id: string;
};

/** How much harm a tool can do; shown on approval cards. */
export type Risk = "low" | "medium" | "high";

export type Run = {
  created_at: string;
  deadline_at: string;
  finished_at?: string | null;
  limits: RunLimits;
  /** Sequence of the `user.message.created` event that started the run. */
  message_seq?: number | null;
  /** Why a terminal run ended: `requested` or `deadline` when cancelled, a code when failed. */
  reason?: string | null;
  run_id: string;
  session_id: string;
  state: RunState;
  /** For the client's status line. */
  status: RunStatus;
  updated_at: string;
};

export type RunCancelled = {
  reason: CancelReason;
  run_id: string;
  /** Always `cancelled`. */
  state: RunState;
};

export type RunCompleted = {
  run_id: string;
  /** Always `completed`. */
  state: RunState;
  usage: RunUsage;
};

export type RunFailed = {
  /** Why, for example `limit.max_steps` or `model.unavailable`. */
  code: string;
  detail: string;
  run_id: string;
  /** Always `failed`. */
  state: RunState;
  usage: RunUsage;
};

export type RunLimits = {
  /** A decimal string, e.g. `"1"` or `"0.25"`. */
  max_cost: string;
  max_model_calls: number;
  max_steps: number;
  max_tool_calls: number;
  run_timeout_seconds: number;
};

/** Where a run is in its life. */
export type RunState = "queued" | "running" | "waiting_approval" | "waiting_input" | "completed" | "failed" | "cancelled";

/** What the client shows under a run's title. */
export type RunStatus = "working" | "needs_approval" | "needs_answer" | "completed" | "failed" | "cancelled";

/** What a whole run used. */
export type RunUsage = {
  /** A decimal string. */
  cost: string;
  input_tokens: number;
  model_calls: number;
  output_tokens: number;
  steps: number;
  tool_calls: number;
};

/**
 * `PUT /v1/email/drafts/{draft_id}`: the next revision, saved only if `expected_revision`
 * is still the newest (otherwise 409 `revision_mismatch` with both versions).
 */
export type SaveDraft = {
  body?: string;
  cc?: string[];
  expected_revision: number;
  subject?: string;
  to?: string[];
};

/** `PUT /v1/settings/models`: one of the offered combinations (the served document lists them). */
export type SaveModelSettings = {
  chat_model: string;
  chat_reasoning_effort: string;
  memory_model: string;
  memory_reasoning_effort: string;
};

/** A schedule as the API shows it (wrapped as `{"schedule": …}`). */
export type Schedule = {
  agent_id: string;
  agent_version: string;
  cadence: Cadence;
  cancelled_at?: string | null;
  consecutive_failures: number;
  created_at: string;
  id: string;
  instruction: string;
  limits: ScheduleLimits;
  max_consecutive_failures: number;
  misfire_grace_seconds: number;
  next_fire_at?: string | null;
  policy_profile: string;
  requested_scopes: string[];
  /** Starts at 1; cancelling increases it. */
  revision: number;
  run_timeout_seconds: number;
  state: ScheduleState;
  title: string;
  updated_at: string;
  /** How long each run may wait for the owner before it expires. */
  wait_timeout_seconds: number;
};

/** `POST /v1/schedules`: the schedule definition. Every member is required. */
export type ScheduleDefinition = {
  /** With `agent_version`: a version a session was created with (take both from a session). */
  agent_id: string;
  agent_version: string;
  cadence: Cadence;
  /** What the agent is asked at each firing. */
  instruction: string;
  limits: ScheduleLimits;
  /** Failed runs in a row that stop the schedule. */
  max_consecutive_failures: number;
  /** How late a firing may start (after downtime) before it is skipped as `misfire`. */
  misfire_grace_seconds: number;
  policy_profile: PolicyProfile;
  /** The scoped tools the schedule's runs may use (never sending). */
  requested_scopes: ScheduleScope[];
  /** A run ends before the next daily firing, so two never overlap. */
  run_timeout_seconds: number;
  title: string;
  /**
   * How long each run may wait for the owner (an approval or a question) before it expires
   * and the run is cancelled with reason `deadline`. Waiting does not count towards
   * `run_timeout_seconds`. Default a day.
   */
  wait_timeout_seconds?: number;
};

export type ScheduleEnvelope = {
  schedule: Schedule;
};

export type ScheduleLimits = {
  /** A decimal string such as `"1"` or `"0.25"`: up to 12 whole digits and 6 decimals. */
  max_cost: string;
  max_model_calls: number;
  max_steps: number;
  max_tool_calls: number;
};

export type ScheduleList = {
  schedules: Schedule[];
};

/** A scope a schedule may request. */
export type ScheduleScope = "mcp.mail_read.use" | "mcp.mail_write.use";

/** Where a schedule is. */
export type ScheduleState = "active" | "cancelled" | "stopped";

export type ScheduledBy = {
  occurrence_id: string;
  schedule_id: string;
  scheduled_for: string;
};

/** What became of a frozen draft's send. */
export type SendState = "preparing" | "awaiting_approval" | "sending" | "sent" | "outcome_unknown" | "unconfirmed" | "not_sent";

/** A session, as returned by creation and point reads. */
export type Session = SessionSummary & ({
  /**
   * The browser profile the conversation's agent acts on (`browser.act`), chosen when it was
   * created; null when none was.
   */
  browser_profile_id?: string | null;
  /**
   * For a draft's send session (which a send approval's notification opens), the draft it
   * sends: review the approval there, against the draft. Null for conversations.
   */
  draft_id?: string | null;
  /** The client metadata given at creation. */
  metadata: Record<string, unknown>;
});

/** One page of the session index. */
export type SessionPage = {
  /** Present until the last page; pass it back as `cursor`. */
  next_cursor?: string | null;
  sessions: SessionSummary[];
};

/** A row of the session index. */
export type SessionSummary = {
  agent_id: string;
  /** The agent version pinned at creation; never changes. */
  agent_version: string;
  created_at: string;
  /** The folder holding the session, or null when it is in the history. */
  folder_id?: string | null;
  /** The most recent run, if any. */
  last_run_id?: string | null;
  /** The schedule that started the session; null for conversations. */
  schedule_id?: string | null;
  session_id: string;
  /** Server-owned title; null until one is known. */
  title?: string | null;
  updated_at: string;
};

/** `PUT /v1/email/learning`. */
export type SetLearning = {
  paused: boolean;
};

/** Who spoke a turn of a transcript. */
export type Speaker = "assistant" | "other";

/** `POST /v1/people/imports`: read the mail already synced in a date range again into People. */
export type StartImport = {
  /** The most messages read, 1 to 10000. */
  record_limit: number;
  /** The first day (UTC) whose messages are read. */
  since: string;
  /**
   * The most the memory model may cost, in USD as a decimal (`"0.50"`; `"0"` asks it nothing),
   * at most `"1000"`.
   */
  spending_cap: string;
  /** The last day (UTC) whose messages are read; not before `since`. */
  until: string;
};

/** What one model step used. */
export type StepUsage = {
  /** A decimal string. */
  cost: string;
  input_tokens: number;
  output_tokens: number;
};

/**
 * The `data` of one frame of a session's event stream: a persisted event beside its position,
 * or transient output.
 */
export type StreamData = Frame | Transient;

/** Wording endorsed as the owner's style. */
export type StyleSample = {
  created_at: string;
  draft_id: string;
  revision: number;
  sample_id: string;
  text: string;
};

/** `POST /v1/sessions/{session_id}/messages`: text, attachments or both. */
export type SubmitMessage = {
  /** Artifacts of this session to attach. */
  attachments?: string[];
  /** The message text; may be omitted when the message is attachments alone. */
  text?: string;
};

/** A sender of bulk mail to one account: a row of the census. */
export type Subscription = {
  account_id: string;
  /** Conversations from the sender in the refresh window. */
  conversations: number;
  /**
   * With `one_click`, the host the request goes to (`One-click request to <host>`); with
   * `mailto`, the address (`Sends an email to <address>`). Never a path, query or URI.
   */
  destination?: string | null;
  /** What a command confirms, with `revision`. */
  evidence_digest: string;
  last_arrival_at: string;
  /**
   * Why the last unsubscribe did not succeed: a stable code (`unsubscribe.redirect_refused`,
   * `unsubscribe.no_answer`, …); null otherwise.
   */
  last_error?: string | null;
  mechanism?: null | UnsubscribeMechanism;
  /** A known correspondent, or a sender of Important or Needs-reply mail: Select all skips it. */
  protected: boolean;
  revision: number;
  sender: Correspondent;
  /**
   * `unverified` reads `Checking…`: the evidence (the newest message's DKIM signature) is
   * not verified, and the row cannot be unsubscribed.
   */
  state: SubscriptionState;
  subscription_id: string;
  unsubscribed_at?: string | null;
};

/**
 * `POST /v1/email/subscriptions/{id}/keep`, `DELETE` of it (undo), `…/spam` and
 * `…/not-spam`: the revision the owner saw.
 */
export type SubscriptionChange = {
  expected_revision: number;
};

/**
 * The row after a change, and the mailbox writes it queued (Report spam and Not spam: one
 * per conversation, each an operation to poll).
 */
export type SubscriptionChanged = {
  operations: EmailOperation[];
  subscription: Subscription;
};

/** `GET /v1/email/subscriptions`: rows in server order (newest arrival first). */
export type SubscriptionPage = {
  next_cursor?: string | null;
  subscriptions: Subscription[];
};

/**
 * A census row's state as clients see it: the owner's decision, or else whether its
 * evidence is verified.
 */
export type SubscriptionState = "unverified" | "eligible" | "kept" | "unsubscribing" | "unsubscribed" | "still_sending" | "reported_spam";

/** The version-1 tap payload: a kind and ids, nothing else. */
export type TapPayload = {
  approval_id?: string | null;
  call_id?: string | null;
  kind: NotificationKind;
  notification_id: string;
  occurrence_id?: string | null;
  question_id?: string | null;
  run_id?: string | null;
  session_id?: string | null;
  v: number;
};

/** Why a target of a command was refused. */
export type TargetRefusal = "not_found" | "changed" | "not_eligible";

/**
 * The task permission an approval of a browser action offers (`Allow all actions for this
 * task`): the profile's origins as its site scope, at most `max_actions` actions (this one
 * included) within `minutes`, never an exception.
 */
export type TaskOffer = {
  /** What it never covers. */
  exceptions: Exception[];
  max_actions: number;
  minutes: number;
  /** The origins the permission covers: the profile's. */
  origins: string[];
};

/**
 * A task permission: within one run, the browser actions on `origins` that are not among
 * `exceptions`, at most `max_actions` of them until `expires_at`, unless stopped first.
 */
export type TaskPermission = {
  /** Actions allowed by it so far, the one whose approval granted it included. */
  actions_used: number;
  /**
   * Whether it still allows actions: not stopped, not expired, actions left, and its run
   * not over.
   */
  active: boolean;
  created_at: string;
  /** What it never covers. */
  exceptions: Exception[];
  expires_at: string;
  max_actions: number;
  /** The site scope: the profile's origins. */
  origins: string[];
  profile_id: string;
  remaining_actions: number;
  run_id: string;
  session_id: string;
  stopped_at?: string | null;
  task_permission_id: string;
};

/** `GET /v1/browser/task-permissions`: the active ones, newest first. */
export type TaskPermissionList = {
  task_permissions: TaskPermission[];
};

/** The one state line a row shows. */
export type ThreadState = "needs_reply" | "for_your_attention" | "handled" | "archived" | "reported" | "draft" | "check_send_status";

/** Who sent a message on a person's timeline. */
export type TimelineDirection = "from_them" | "to_them";

/** A message on a person's timeline. */
export type TimelineEntry = {
  direction: TimelineDirection;
  email_thread_id: string;
  provider_message_id: string;
  sent_at: string;
  subject: string;
};

export type ToolCall = {
  /** The arguments as the model gave them. */
  arguments: Record<string, unknown>;
  /** The model's id of the call, unique within its run. */
  call_id: string;
  tool: string;
};

export type ToolResult = {
  call_id: string;
  /** Why it did not succeed (for example `approval.denied`, `tool.outcome_unknown`). */
  code?: string | null;
  invocation_id: string;
  /** The tool's output. */
  result: unknown;
  risk?: null | Risk;
  run_id: string;
  status: InvocationState;
  tool: string;
  trust: Trust;
};

export type ToolStarted = {
  call_id: string;
  invocation_id: string;
  risk?: null | Risk;
  run_id: string;
  tool: string;
};

/** One turn of a transcript. */
export type TranscriptTurn = {
  speaker: Speaker;
  text: string;
};

/**
 * Transient output of a run: relayed as it is produced, never stored, sent without an SSE
 * `id` (so it never moves a client's replay cursor). On the wire: `{"kind", "run_id", "text"}`.
 */
export type Transient = (Delta & {
  kind: "assistant.delta";
}) | (Delta & {
  kind: "reasoning.delta";
});

/** How a client must treat content: tool output is data, never instructions. */
export type Trust = "tool_output";

/** `POST /v1/email/subscriptions/unsubscribe`: one confirmed command. */
export type Unsubscribe = {
  /** Also archive the senders' mail now in the Inbox, after each unsubscribe succeeds. */
  also_archive?: boolean;
  /** One to 25 senders, each once, all of one account. */
  targets: UnsubscribeTarget[];
};

/**
 * `POST /v1/email/subscriptions/unsubscribe` (202): the operation running the accepted
 * targets (poll `GET /v1/email/operations/{id}`), and the refused ones. When every target is
 * refused nothing runs and the answer is a 409 problem (`email_subscription_changed`).
 */
export type UnsubscribeAnswer = {
  operation: EmailOperation;
  refused: RefusedTarget[];
};

/** What an unsubscribe sends: an RFC 8058 one-click request, or one message. */
export type UnsubscribeMechanism = "one_click" | "mailto";

/** One sender of an unsubscribe command, as the owner confirmed it. */
export type UnsubscribeTarget = {
  /** The row's `evidence_digest` when it was confirmed. */
  evidence_digest: string;
  /** The row's `revision` when it was confirmed. */
  expected_revision: number;
  subscription_id: string;
};

/** One target of an unsubscribe operation, as `GET /v1/email/operations/{id}` shows it. */
export type UnsubscribeTargetStatus = {
  /** The host or address, as on the row. */
  destination: string;
  /** A stable code when it failed or was left uncertain. */
  error?: string | null;
  mechanism: UnsubscribeMechanism;
  state: EmailOperationState;
  subscription_id: string;
};

/** `PATCH /v1/people/{person_id}`: each member given changes that field. */
export type UpdatePerson = {
  /** 1 to 200 characters. */
  name?: string;
  pinned?: boolean;
  /** 1 to 100 characters; an explicit `null` clears it. */
  relationship?: string | null;
  /** `true`: reviewed, out of Needs review (it cannot be put back). */
  reviewed?: boolean;
};

/** `PATCH /v1/sessions/{session_id}`. */
export type UpdateSession = {
  /**
   * Required: a folder id files the session there; an explicit `null` returns it to the
   * history.
   */
  folder_id: string | null;
};

/** The multipart form of an upload: exactly one part, the file. */
export type UploadForm = {
  /** The file; its part's filename and Content-Type name it and give its media type. */
  file: string;
};

export type UserMessage = {
  attachments: Attachment[];
  text?: string | null;
};

export type UserMessageCreated = {
  message: UserMessage;
  run_id: string;
  schedule?: null | ScheduledBy;
};

/** `GET /v1/devices/web-push`: what a web client subscribes with. */
export type WebPushKey = {
  /**
   * The server's VAPID public key (RFC 8292), the subscription's `applicationServerKey`:
   * an uncompressed P-256 point, base64url without padding.
   */
  application_server_key: string;
};

/** The caller's credential: made by `POST /v1/web/session`, read by `GET`. */
export type WebSession = {
  credential: WebSessionCredential;
  /** When a web session ends; null for the bearer token. */
  expires_at?: string | null;
  /** The scopes this credential holds now. */
  scopes: string[];
};

/** How a request authenticated, as `GET /v1/web/session` reports it. */
export type WebSessionCredential = "bearer" | "web_session";
