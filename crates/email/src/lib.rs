//! Email mode (issue 17): what the async worker (refresh, assessment) and the worker (provider
//! writes) do; the API serves the projections through `store` and links none of it.
//!
//! - [`project`]: one message as the mailbox projection keeps it: correspondents, subject,
//!   date, plain text (HTML reduced to text, no remote content ever fetched) and attachment
//!   metadata (never attachment bytes), with the headers that mark bulk mail.
//! - [`assess`]: the offline, rule-based classifier (the dev and test default), pinned at
//!   [`assess::CLASSIFIER_VERSION`]: importance, reply need and a one-line gist.
//! - [`beliefs`]: beliefs from the owner's sent mail when people are gathered (the memory model
//!   within the allowances, the mail marked untrusted; else the rule-based former).
//! - [`classify`]: the classifier the async worker uses: the offline rules, or the agent's model
//!   through the OpenAI-compatible client, each request within the cost allowances and charged.
//! - [`propose`]: the agent's proposed replies, landed as revisions of the conversation's draft
//!   for the owner to edit (the model within the allowances, or an offline acknowledgement
//!   closed with the owner's endorsed wording).
//! - [`provider`]: the provider as the async worker reads it with the read document only: the
//!   profile, the changes since a history id (an expired one means a full resync), raw messages.
//! - [`refresh`]: one account's update into the store's projections: a bounded backfill first
//!   (and after an expired history id), then incremental updates from the history, then the
//!   assessment of what waits.
//! - [`imports`]: Import history's durable reading in the async worker (claims, batches,
//!   the spending cap).
//! - [`untrusted`]: mail as a model reads it: between markers with a random per-request
//!   boundary, every look-alike of a marker inside neutralized (assessment and proposals).
//! - [`worker`]: the async worker's loop: requested refreshes (operations) and the background
//!   cadence.
//! - [`writes`]: the provider writes (archive, move back, report spam, Not spam) the worker
//!   runs as durable operations with the write document; an uncertain one is settled by reading
//!   the thread's labels, never sent again.
//! - [`offer`]: what a bulk message offers to stop it (RFC 2369 `List-Unsubscribe`, RFC 8058
//!   one-click), parsed by strict rules; [`evidence`]: whether its DKIM signature proves it;
//!   [`census`]: the subscription census the async worker keeps from both; [`oneclick`]: the
//!   worker's one-click transport (public HTTPS addresses only, pinned, no redirects);
//!   [`dns`]: the resolver both look names up with; [`unsubscribe`]: the confirmed commands the
//!   worker runs, each target once.
//! - [`junk`]: the junk first pass before assessment (shadow, filter, pilot): protection, the
//!   offline rules or the model's judgment, and the mode the evidence packet puts in force;
//!   [`screen`]: the pass as each update runs it; [`calibrate`]: the calibration tool's
//!   bounded replay, and the packet an owner's review of it makes.
//! - [`allowance`]: the email cost allowances (USD 20 per UTC day, USD 200 per rolling 30 days)
//!   and the `runtime/limits.yaml` overlay that may change them to finite amounts.

pub mod allowance;
pub mod assess;
pub mod beliefs;
pub mod calibrate;
pub mod census;
pub mod classify;
pub mod dns;
pub mod evidence;
pub mod imports;
pub mod junk;
pub mod offer;
pub mod oneclick;
pub mod project;
pub mod propose;
pub mod provider;
pub mod refresh;
pub mod screen;
pub mod unsubscribe;
pub mod untrusted;
pub mod worker;
pub mod writes;
