//! Email mode (issue 17), built in slices and mounted nowhere yet: nothing in a role or route
//! links this crate until the async worker and the `/v1/email` routes arrive.
//!
//! - [`project`]: one message as the mailbox projection keeps it: correspondents, subject,
//!   date, plain text (HTML reduced to text, no remote content ever fetched) and attachment
//!   metadata (never attachment bytes), with the headers that mark bulk mail.
//! - [`assess`]: the offline, rule-based classifier (the dev and test default), pinned at
//!   [`assess::CLASSIFIER_VERSION`]: importance, reply need and a one-line gist.

pub mod assess;
pub mod project;
