//! Approvals and questions. An approval shows the tool's arguments whole except strings over 512
//! characters, which the server cuts and proves with a SHA-256 in `argument_digests` (keyed by
//! JSON Pointer). Before anything can be approved, [`check`] makes sure every cut is proven:
//! each digest must name a string of exactly 512 characters, and a string of 512 characters
//! without a digest may have been cut with nothing to prove it, so it is refused. Given the
//! whole arguments the client expects (the model's proposed call from the event log, or a draft
//! it froze), [`check`] also requires the approval to be exactly what those arguments display
//! as: every cut string a prefix of the expected one whose SHA-256 is its digest, every other
//! member equal. Then the whole expected value can be shown in place of the cut one.
//!
//! Decisions go once: the first stored resolution wins, and a later one is answered with the
//! resolution that stands ([`Decided::AlreadyResolved`]).

use std::collections::BTreeMap;

use domain::approval::{ApprovalStatus, DISPLAY_STRING_MAX_CHARS, display_arguments, pointer_token};
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;
use wire::event::Event;
use wire::request::{AnswerQuestion, DecideApproval, Decision};
use wire::response::{Approval, ApprovalList, Run};

use crate::{Client, ClientError, Result};

/// Why an approval cannot be approved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("`{0}` is a 512-character string without a digest: it may have been cut with nothing to prove it")]
    CutWithoutDigest(String),
    #[error("the digest for `{0}` does not name a cut string of 512 characters")]
    DigestWithoutCut(String),
    #[error("the digest for `{0}` is not a SHA-256")]
    MalformedDigest(String),
    #[error("the arguments shown are not the arguments expected (first difference at `{0}`)")]
    Mismatch(String),
    #[error("`{0}` was cut, and no proposed call was found to prove it against")]
    Unverifiable(String),
}

/// An approval whose cuts are all proven. Only [`check`] makes one (it cannot be built outside
/// this crate), so approving needs a check.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CheckedApproval {
    /// The arguments to show: the whole expected arguments when they were given and match,
    /// otherwise the server's (cut) arguments.
    pub arguments: Value,
    /// Whether `arguments` is whole (no string cut).
    pub whole: bool,
    /// The cut strings, by JSON Pointer, with their digests (empty when `whole`).
    pub cuts: BTreeMap<String, String>,
}

/// Checks an approval's `arguments` and `digests` (see the module's description); `expected` is
/// the whole arguments the client expects, when it knows them.
pub fn check(
    arguments: &Value,
    digests: &BTreeMap<String, String>,
    expected: Option<&Value>,
) -> Result<CheckedApproval, Refused> {
    for (pointer, digest) in digests {
        if digest.len() != 64 || !digest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(Refused::MalformedDigest(pointer.clone()));
        }
        let cut = arguments
            .pointer(pointer)
            .and_then(Value::as_str)
            .is_some_and(|text| text.chars().count() == DISPLAY_STRING_MAX_CHARS);
        if !cut {
            return Err(Refused::DigestWithoutCut(pointer.clone()));
        }
    }
    if let Some(expected) = expected {
        let shown = display_arguments(expected);
        let shown_digests: BTreeMap<String, String> = shown
            .argument_digests
            .iter()
            .map(|(pointer, digest)| (pointer.clone(), digest.as_str().unwrap_or_default().to_owned()))
            .collect();
        if shown.arguments != *arguments {
            return Err(Refused::Mismatch(first_difference(
                &shown.arguments,
                arguments,
                String::new(),
            )));
        }
        if let Some(pointer) = shown_digests
            .keys()
            .chain(digests.keys())
            .find(|pointer| shown_digests.get(*pointer) != digests.get(*pointer))
        {
            return Err(Refused::Mismatch(pointer.clone()));
        }
        return Ok(CheckedApproval {
            arguments: expected.clone(),
            whole: true,
            cuts: BTreeMap::new(),
        });
    }
    let mut undigested = None;
    walk_strings(arguments, String::new(), &mut |pointer, text| {
        if undigested.is_none() && text.chars().count() >= DISPLAY_STRING_MAX_CHARS && !digests.contains_key(pointer) {
            undigested = Some(pointer.to_owned());
        }
    });
    if let Some(pointer) = undigested {
        return Err(Refused::CutWithoutDigest(pointer));
    }
    Ok(CheckedApproval {
        arguments: arguments.clone(),
        whole: digests.is_empty(),
        cuts: digests.clone(),
    })
}

/// Checks an approval against the calls the model proposed for its tool in its run (see
/// [`Client::proposals`]): it must be exactly the display of one of them. With no proposal at
/// hand, an approval with a cut string is refused, since nothing can prove the cut.
pub fn check_against_proposals(
    arguments: &Value,
    digests: &BTreeMap<String, String>,
    proposals: &[Value],
) -> Result<CheckedApproval, Refused> {
    let Some(first) = proposals.first() else {
        let checked = check(arguments, digests, None)?;
        return match checked.cuts.keys().next() {
            Some(pointer) => Err(Refused::Unverifiable(pointer.clone())),
            None => Ok(checked),
        };
    };
    proposals
        .iter()
        .find_map(|proposal| check(arguments, digests, Some(proposal)).ok())
        .map_or_else(|| check(arguments, digests, Some(first)), Ok)
}

fn walk_strings(value: &Value, pointer: String, visit: &mut impl FnMut(&str, &str)) {
    match value {
        Value::String(text) => visit(&pointer, text),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk_strings(item, format!("{pointer}/{index}"), visit);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                walk_strings(item, format!("{pointer}/{}", pointer_token(key)), visit);
            }
        }
        _ => {}
    }
}

/// The JSON Pointer of the first place `a` and `b` differ (`""` for the whole value).
fn first_difference(a: &Value, b: &Value, pointer: String) -> String {
    match (a, b) {
        (Value::Object(left), Value::Object(right)) => {
            for key in left.keys().chain(right.keys()) {
                let escaped = pointer_token(key);
                match (left.get(key), right.get(key)) {
                    (Some(x), Some(y)) if x == y => {}
                    (Some(x), Some(y)) => return first_difference(x, y, format!("{pointer}/{escaped}")),
                    _ => return format!("{pointer}/{escaped}"),
                }
            }
            pointer
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => left
            .iter()
            .zip(right)
            .enumerate()
            .find(|(_, (x, y))| x != y)
            .map_or(pointer.clone(), |(index, (x, y))| {
                first_difference(x, y, format!("{pointer}/{index}"))
            }),
        _ => pointer,
    }
}

/// What deciding did.
#[derive(Clone, Debug, PartialEq)]
pub enum Decided {
    /// This decision is the stored resolution.
    Decided(Box<Approval>),
    /// Another resolution was stored first (or the approval expired); it stands.
    AlreadyResolved(ApprovalStatus),
}

impl Client {
    /// The calls the model proposed for `approval`'s tool in its run, whole, read from the
    /// session's stored events from the run's message up to the approval's own request.
    pub async fn proposals(&self, approval: &Approval) -> Result<Vec<Value>> {
        let after = self.run(approval.run_id).await?.message_seq.unwrap_or(0);
        let mut follow = self.follow(approval.session_id, after, Some(approval.run_id));
        let mut proposals = Vec::new();
        let read = async {
            while let Some(update) = follow.next().await {
                let crate::Update::Event(frame) = update? else {
                    continue;
                };
                match frame.event {
                    Event::AssistantMessage(step) if step.run_id == approval.run_id => proposals.extend(
                        step.tool_calls
                            .into_iter()
                            .filter(|call| call.tool == approval.tool)
                            .map(|call| call.arguments),
                    ),
                    Event::ApprovalRequested(requested) if requested.approval_id == approval.approval_id => {
                        return Ok(());
                    }
                    _ => {}
                }
            }
            Ok(())
        };
        match tokio::time::timeout(std::time::Duration::from_secs(30), read).await {
            Ok(outcome) => outcome.map(|()| proposals),
            Err(_) => Err(ClientError::Unexpected {
                status: 200,
                message: "the approval's request was not found in the session's events".into(),
            }),
        }
    }

    /// The session's pending approvals, oldest first.
    pub async fn approvals(&self, session: Uuid) -> Result<Vec<Approval>> {
        Ok(self
            .get::<ApprovalList>(&format!("v1/sessions/{session}/approvals"))
            .await?
            .approvals)
    }

    /// Approves once, after [`check`] passed; see [`Client::decide`].
    pub async fn approve_once(&self, approval: Uuid, _checked: &CheckedApproval) -> Result<Decided> {
        self.decide(approval, Decision::ApproveOnce).await
    }

    /// Denies (no check is needed to refuse).
    pub async fn deny(&self, approval: Uuid) -> Result<Decided> {
        self.decide(approval, Decision::Deny).await
    }

    async fn decide(&self, approval: Uuid, decision: Decision) -> Result<Decided> {
        let body = DecideApproval { decision };
        match self
            .json::<_, Approval>(Method::POST, &format!("v1/approvals/{approval}/decision"), &body)
            .await
        {
            Ok(decided) => Ok(Decided::Decided(Box::new(decided))),
            Err(ClientError::Problem { problem, .. }) if problem.code == "approval_already_resolved" => {
                match problem.resolution {
                    Some(status) => Ok(Decided::AlreadyResolved(status)),
                    None => Err(ClientError::Unexpected {
                        status: problem.status,
                        message: "approval_already_resolved without a resolution".into(),
                    }),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Answers the question `question` (the identifier it was displayed with) of run `run`.
    pub async fn answer(&self, run: Uuid, question: Uuid, text: &str) -> Result<Run> {
        let body = AnswerQuestion {
            question_id: question,
            text: text.to_owned(),
        };
        self.json(Method::POST, &format!("v1/runs/{run}/input"), &body).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(expected: &Value) -> (Value, BTreeMap<String, String>) {
        let shown = display_arguments(expected);
        let digests = shown
            .argument_digests
            .into_iter()
            .map(|(pointer, digest)| (pointer, digest.as_str().expect("hex").to_owned()))
            .collect();
        (shown.arguments, digests)
    }

    /// The vectors the web client's proof is tested on too (`web/unit/approvals.test.mjs`): both
    /// clients prove or refuse the same approvals.
    #[test]
    fn the_shared_vectors_are_proven_or_refused_as_in_the_web_client() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/approvals.json");
        let vectors: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read the vectors")).expect("json");
        let cases = vectors["cases"].as_array().expect("cases");
        assert!(cases.len() >= 10);
        for case in cases {
            let name = case["name"].as_str().expect("name");
            let digests: BTreeMap<String, String> = serde_json::from_value(case["digests"].clone()).expect("digests");
            let proposals = case["proposals"].as_array().expect("proposals");
            let verdict = check_against_proposals(&case["arguments"], &digests, proposals);
            match case["verdict"].as_str() {
                Some("proven") => {
                    let checked = verdict.unwrap_or_else(|refused| panic!("{name}: refused: {refused}"));
                    assert_eq!(checked.arguments, case["whole"], "{name}: the whole is shown");
                    assert_eq!(
                        shown(&case["whole"]),
                        (case["arguments"].clone(), digests),
                        "{name}: its display"
                    );
                }
                Some("refused") => assert!(verdict.is_err(), "{name}: proven, but the web client refuses it"),
                other => panic!("{name}: verdict {other:?}"),
            }
        }
    }

    #[test]
    fn whole_arguments_pass_and_a_proven_cut_shows_the_expected_value() {
        let short = json!({ "text": "Buy oat milk", "n": 2 });
        let checked = check(&short, &BTreeMap::new(), None).expect("nothing cut");
        assert!(checked.whole);

        let long = json!({ "to": ["a@example.com"], "body": "é".repeat(700) });
        let (arguments, digests) = shown(&long);
        let checked = check(&arguments, &digests, None).expect("structurally proven");
        assert!(!checked.whole);
        assert_eq!(checked.cuts.keys().collect::<Vec<_>>(), ["/body"]);
        let checked = check(&arguments, &digests, Some(&long)).expect("matches what was expected");
        assert!(checked.whole);
        assert_eq!(checked.arguments, long);
    }

    #[test]
    fn proposals_prove_cuts_and_none_leaves_a_cut_unproven() {
        let long = json!({ "body": "z".repeat(600) });
        let other = json!({ "body": "y".repeat(600) });
        let (arguments, digests) = shown(&long);
        assert!(check_against_proposals(&arguments, &digests, &[other.clone(), long.clone()]).is_ok_and(|c| c.whole));
        assert_eq!(
            check_against_proposals(&arguments, &digests, &[other]),
            Err(Refused::Mismatch("/body".into()))
        );
        assert_eq!(
            check_against_proposals(&arguments, &digests, &[]),
            Err(Refused::Unverifiable("/body".into()))
        );
        let short = json!({ "text": "short" });
        assert!(check_against_proposals(&short, &BTreeMap::new(), &[]).is_ok());
    }

    #[test]
    fn tampering_is_refused() {
        let long = json!({ "body": format!("{}{}", "a".repeat(600), "tail") });
        let (arguments, digests) = shown(&long);

        // A cut string without its digest.
        assert_eq!(
            check(&arguments, &BTreeMap::new(), None),
            Err(Refused::CutWithoutDigest("/body".into()))
        );
        // A digest that names something not cut.
        let mut wrong = digests.clone();
        wrong.insert("/other".into(), "0".repeat(64));
        assert_eq!(
            check(&arguments, &wrong, None),
            Err(Refused::DigestWithoutCut("/other".into()))
        );
        let mut malformed = digests.clone();
        malformed.insert("/body".into(), "not-hex".into());
        assert_eq!(
            check(&arguments, &malformed, None),
            Err(Refused::MalformedDigest("/body".into()))
        );
        // The displayed prefix changed, digest kept: not what the model proposed.
        let mut changed = arguments.clone();
        changed["body"] = Value::String(format!("b{}", "a".repeat(511)));
        assert_eq!(
            check(&changed, &digests, Some(&long)),
            Err(Refused::Mismatch("/body".into()))
        );
        // The digest changed (a different whole value behind the same prefix).
        let mut other = digests.clone();
        other.insert("/body".into(), "f".repeat(64));
        assert_eq!(
            check(&arguments, &other, Some(&long)),
            Err(Refused::Mismatch("/body".into()))
        );
        // An uncut member changed.
        let with_extra = json!({ "body": long["body"], "cc": "x@example.com" });
        assert_eq!(
            check(&arguments, &digests, Some(&with_extra)),
            Err(Refused::Mismatch("/cc".into()))
        );
    }
}
