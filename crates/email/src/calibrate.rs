//! The calibration tool (`steward-async-worker calibrate`): replays the junk classifier over
//! recent mail so the owner can review a sample and build an evidence packet. It never writes a
//! label, never changes a conversation and never writes to the provider.
//!
//! - **Bounded** (spec, Limits: "Replay diagnostic"): at most `--max-threads` conversations, and
//!   with the model at most `--max-cost-usd`: a request whose ceiling would take the replay over
//!   it is not sent (nor one the email cost allowances have no room for). Each request is
//!   journaled `email.junk.started` (purpose `calibration`) before it leaves and charged to the
//!   allowances like any other.
//! - **Sampled** in three strata: personal outreach (personal mail from people the owner has
//!   not written to) and transactional mail, a tenth of the bound each but at least 10 (a
//!   quarter of the bound at most), as far as there are; the rest a uniform random sample of
//!   everything else. Protected
//!   conversations are skipped (counted, never invented as keep).
//! - **Written** to a private file created exclusively (mode 0600; an existing file is never
//!   overwritten): the packet's observations with `owner_label` left `null` for the owner, and
//!   beside them (`review`) what the owner needs to review each: the conversation, its sender
//!   and subject. [`packet_from_review`] turns the reviewed file into the packet itself, every
//!   observation labelled, without the review columns.

use std::collections::{HashMap, HashSet};

use domain::ids::AccountId;
use domain::junk::{
    JUNK_PILOT_POLICY, JUNK_POLICY, JunkCategory, ObservationSource, OwnerLabel, PILOT_VALIDITY, Stratum,
};
use domain::run::Cost;
use serde::{Deserialize, Serialize};
use store::ReplayCandidate;

use crate::assess::Mailbox;
use crate::classify::Classifier;
use crate::junk::{fingerprint, judge_offline, protection};
use crate::refresh::{RefreshError, Refresher, rebuild};
use crate::screen::Judged;

/// The most conversations one replay may look at.
pub const MAX_THREADS: usize = 2_000;
/// Candidates read per conversation the replay may judge (the sample is drawn from these).
const CANDIDATES_PER_THREAD: usize = 20;

/// What the owner asked to replay.
#[derive(Clone, Debug)]
pub struct ReplayBounds {
    pub max_threads: usize,
    pub max_cost: Cost,
    /// One account, or every one.
    pub account: Option<AccountId>,
    /// Only conversations in the Inbox (a pilot's live inbox sample).
    pub inbox_only: bool,
}

/// One observation as the replay writes it: the packet's fields, the owner's label to fill in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewObservation {
    pub fingerprint: String,
    pub category: JunkCategory,
    pub probability: f64,
    pub owner_label: Option<OwnerLabel>,
    pub source: ObservationSource,
    pub stratum: Stratum,
}

/// What the owner reviews an observation by (never part of a packet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRow {
    pub fingerprint: String,
    pub account_id: String,
    pub thread_id: uuid::Uuid,
    pub from: Option<String>,
    pub subject: String,
}

/// The replay's results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    pub policy: String,
    pub model: String,
    pub observations: Vec<ReviewObservation>,
    pub review: Vec<ReviewRow>,
    /// Protected conversations passed over.
    pub skipped_protected: usize,
    /// Why the replay stopped before its bound, if it did: `max_cost`, `allowance` or
    /// `model_failed`.
    pub stopped: Option<String>,
    /// What its model requests were charged, in USD.
    pub spent_usd: String,
}

/// A uniform shuffle with the operating system's random source (Fisher–Yates).
fn shuffle<T>(items: &mut [T]) {
    for index in (1..items.len()).rev() {
        let mut bytes = [0_u8; 8];
        getrandom::fill(&mut bytes).expect("the operating system's random source");
        let pick = u64::from_le_bytes(bytes) % (index as u64 + 1);
        items.swap(index, usize::try_from(pick).unwrap_or_default());
    }
}

impl Refresher {
    /// Replays the junk classifier within `bounds` (see the module).
    pub async fn replay(&self, bounds: &ReplayBounds) -> Result<Review, RefreshError> {
        let email = self.store.email();
        let since = self.store.now() - self.backfill;
        let limit = i64::try_from(bounds.max_threads.min(MAX_THREADS) * CANDIDATES_PER_THREAD).unwrap_or(i64::MAX);
        let candidates = email
            .replay_candidates(bounds.account.as_ref(), since, bounds.inbox_only, limit)
            .await?;
        let mut mailboxes: HashMap<AccountId, (HashSet<String>, HashSet<String>)> = HashMap::new();
        let mut eligible: Vec<(Stratum, ReplayCandidate)> = Vec::new();
        let mut skipped_protected = 0;
        for candidate in candidates {
            if !mailboxes.contains_key(&candidate.account_id) {
                let owner: HashSet<String> = email
                    .account(&candidate.account_id)
                    .await?
                    .and_then(|account| account.address)
                    .map(|address| address.to_lowercase())
                    .into_iter()
                    .collect();
                let known = email
                    .known_correspondents(&candidate.account_id)
                    .await?
                    .into_iter()
                    .collect();
                mailboxes.insert(candidate.account_id.clone(), (owner, known));
            }
            let (owner, known) = &mailboxes[&candidate.account_id];
            let mailbox = Mailbox { owner, known };
            let message = rebuild(&candidate.message);
            let sender = message.from.as_ref().map(|from| from.address.as_str());
            let facts = email
                .junk_facts(
                    candidate.thread,
                    &candidate.message.provider_message_id,
                    sender,
                    crate::assess::kind(&message),
                )
                .await?;
            if protection(&message, &facts, mailbox).is_some() {
                skipped_protected += 1;
                continue;
            }
            let stratum = match crate::assess::kind(&message) {
                domain::feedback::ContentKind::Personal => Stratum::PersonalOutreach,
                domain::feedback::ContentKind::Transactional => Stratum::Transactional,
                domain::feedback::ContentKind::Bulk => Stratum::Random,
            };
            eligible.push((stratum, candidate));
        }
        shuffle(&mut eligible);
        let bound = bounds.max_threads.min(MAX_THREADS);
        // At least 10 of each when the bound has room (a quarter of it at most), so a bound of
        // 100 draws exactly the general floor's 80 random, 10 and 10.
        let share = (bound / 10).max(10).min(bound / 4);
        let mut chosen: Vec<(Stratum, ReplayCandidate)> = Vec::new();
        for stratum in [Stratum::PersonalOutreach, Stratum::Transactional] {
            let mut taken = 0;
            eligible.retain(|(of, candidate)| {
                if *of == stratum && taken < share && chosen.len() < bound {
                    chosen.push((stratum, candidate.clone()));
                    taken += 1;
                    false
                } else {
                    true
                }
            });
        }
        for (_, candidate) in eligible {
            if chosen.len() >= bound {
                break;
            }
            chosen.push((Stratum::Random, candidate));
        }

        let model = self.junk_model().to_owned();
        let mut review = Review {
            policy: if bounds.inbox_only {
                JUNK_PILOT_POLICY
            } else {
                JUNK_POLICY
            }
            .to_owned(),
            model,
            observations: Vec::new(),
            review: Vec::new(),
            skipped_protected,
            stopped: None,
            spent_usd: String::new(),
        };
        let mut spent = 0_i64;
        for (stratum, candidate) in chosen {
            let message = rebuild(&candidate.message);
            let judgment = match self.classifier.as_ref() {
                Classifier::Offline => Some(judge_offline(&message)),
                Classifier::Model(model) => {
                    let ceiling = model.prepare_judgment(&message).ceiling;
                    if spent.saturating_add(ceiling.micros()) > bounds.max_cost.micros() {
                        review.stopped = Some("max_cost".into());
                        break;
                    }
                    let (judged, charge) = self
                        .judge_with_model(model, &candidate.account_id, &message, "calibration")
                        .await?;
                    spent = spent.saturating_add(charge.micros());
                    match judged {
                        Judged::Answer(judgment) => judgment,
                        Judged::Spent(_) => {
                            review.stopped = Some("allowance".into());
                            break;
                        }
                        Judged::Failed => {
                            review.stopped = Some("model_failed".into());
                            break;
                        }
                    }
                }
            };
            // An unreadable answer is no classification: nothing to review.
            let Some(judgment) = judgment else {
                continue;
            };
            let print = fingerprint(&candidate.account_id, &candidate.message.provider_message_id);
            review.observations.push(ReviewObservation {
                fingerprint: print.clone(),
                category: judgment.category,
                probability: judgment.probability,
                owner_label: None,
                source: ObservationSource::OwnerReview,
                stratum,
            });
            review.review.push(ReviewRow {
                fingerprint: print,
                account_id: candidate.account_id.as_str().to_owned(),
                thread_id: candidate.thread.as_uuid(),
                from: candidate.message.sender.as_ref().map(|from| from.address.clone()),
                subject: candidate.message.subject.clone(),
            });
        }
        review.spent_usd = Cost::from_micros(spent).to_string();
        Ok(review)
    }
}

/// How a pilot packet is bound: to the owner (`principal`), from `issued_at` for `days` days.
#[derive(Clone, Debug)]
pub struct PilotBinding {
    pub principal: String,
    pub issued_at: jiff::Timestamp,
    pub days: i64,
}

/// The evidence packet of a reviewed results file: every observation must carry the owner's
/// label; the review columns are left out. With `pilot`, the pilot packet of the one account
/// the review covers (the sample is its live inbox); else the calibration packet. The packet
/// is checked against its floor by the async worker (and preflight), not here: a packet below
/// it is still written, so the owner sees what is missing when it is refused.
pub fn packet_from_review(json: &[u8], pilot: Option<&PilotBinding>) -> Result<serde_json::Value, String> {
    let review: Review = serde_json::from_slice(json).map_err(|error| format!("not a results file: {error}"))?;
    let unlabelled = review
        .observations
        .iter()
        .filter(|observation| observation.owner_label.is_none())
        .count();
    if unlabelled > 0 {
        return Err(format!(
            "{unlabelled} observation(s) have no owner_label: set each to \"junk\" or \"keep\""
        ));
    }
    let label = |observation: &ReviewObservation| observation.owner_label.map(OwnerLabel::as_str);
    let Some(pilot) = pilot else {
        let observations: Vec<serde_json::Value> = review
            .observations
            .iter()
            .map(|observation| {
                serde_json::json!({"fingerprint": observation.fingerprint, "category": observation.category,
                    "probability": observation.probability, "owner_label": label(observation),
                    "source": observation.source, "stratum": observation.stratum})
            })
            .collect();
        return Ok(serde_json::json!({"policy": JUNK_POLICY, "model": review.model, "observations": observations}));
    };
    let accounts: HashSet<&str> = review.review.iter().map(|row| row.account_id.as_str()).collect();
    let [account] = accounts.into_iter().collect::<Vec<_>>()[..] else {
        return Err("a pilot packet covers one account: replay it with --account and --inbox".into());
    };
    if review.policy != JUNK_PILOT_POLICY {
        return Err("a pilot packet is a sample of the live inbox: replay it with --account and --inbox".into());
    }
    if !(1..=PILOT_VALIDITY.as_hours() / 24).contains(&pilot.days) {
        return Err("a pilot packet is valid for 1 to 7 days".into());
    }
    // A pilot observation carries no probability: junk below the threshold is uncertain (a
    // protected class, never filtered), so it is no classification and is left out.
    let observations: Vec<serde_json::Value> = review
        .observations
        .iter()
        .filter(|observation| {
            observation.category == JunkCategory::Keep
                || domain::junk::nominates(observation.category, observation.probability)
        })
        .map(|observation| {
            serde_json::json!({"fingerprint": observation.fingerprint, "category": observation.category,
                "owner_label": label(observation), "source": observation.source})
        })
        .collect();
    Ok(serde_json::json!({
        "policy": JUNK_PILOT_POLICY, "model": review.model, "tenant_id": domain::junk::OWNER_TENANT,
        "principal_id": pilot.principal, "account_id": account, "sample": "selected_live_inbox",
        "issued_at": pilot.issued_at.to_string(),
        "expires_at": (pilot.issued_at + jiff::SignedDuration::from_hours(24 * pilot.days)).to_string(),
        "observations": observations,
    }))
}

/// `steward-async-worker calibrate`'s usage.
pub const CALIBRATE_USAGE: &str = "usage: steward-async-worker calibrate --max-threads N --max-cost-usd AMOUNT --out FILE \
[--account ID] [--inbox]";
/// `steward-async-worker junk-packet`'s usage.
pub const PACKET_USAGE: &str = "usage: steward-async-worker junk-packet --review FILE --out FILE [--pilot-days N]";

/// What `calibrate` was asked.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrateArgs {
    pub bounds: ReplayBounds,
    pub out: std::path::PathBuf,
}

impl PartialEq for ReplayBounds {
    fn eq(&self, other: &ReplayBounds) -> bool {
        (self.max_threads, self.max_cost, &self.account, self.inbox_only)
            == (other.max_threads, other.max_cost, &other.account, other.inbox_only)
    }
}

/// Reads `calibrate`'s arguments: both bounds are required.
pub fn calibrate_args(args: &[String]) -> Result<CalibrateArgs, String> {
    let (mut threads, mut cost, mut out, mut account, mut inbox) = (None, None, None, None, false);
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value; {CALIBRATE_USAGE}"));
        match flag.as_str() {
            "--max-threads" => {
                let text = value()?;
                threads = Some(
                    text.parse::<usize>()
                        .ok()
                        .filter(|count| (1..=MAX_THREADS).contains(count))
                        .ok_or(format!(
                            "--max-threads must be a whole number from 1 to {MAX_THREADS}, got `{text}`"
                        ))?,
                );
            }
            "--max-cost-usd" => {
                let text = value()?;
                cost = Some(
                    Cost::parse(text)
                        .map_err(|_| format!("--max-cost-usd must be an amount in USD such as 0.05, got `{text}`"))?,
                );
            }
            "--out" => out = Some(std::path::PathBuf::from(value()?)),
            "--account" => account = Some(AccountId::from(value()?.as_str())),
            "--inbox" => inbox = true,
            other => return Err(format!("unknown argument `{other}`; {CALIBRATE_USAGE}")),
        }
    }
    let missing = |what: &str| format!("{what} is required; {CALIBRATE_USAGE}");
    Ok(CalibrateArgs {
        bounds: ReplayBounds {
            max_threads: threads.ok_or_else(|| missing("--max-threads"))?,
            max_cost: cost.ok_or_else(|| missing("--max-cost-usd"))?,
            account,
            inbox_only: inbox,
        },
        out: out.ok_or_else(|| missing("--out"))?,
    })
}

/// What `junk-packet` was asked.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketArgs {
    pub review: std::path::PathBuf,
    pub out: std::path::PathBuf,
    pub pilot_days: Option<i64>,
}

/// Reads `junk-packet`'s arguments.
pub fn packet_args(args: &[String]) -> Result<PacketArgs, String> {
    let (mut review, mut out, mut days) = (None, None, None);
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value; {PACKET_USAGE}"));
        match flag.as_str() {
            "--review" => review = Some(std::path::PathBuf::from(value()?)),
            "--out" => out = Some(std::path::PathBuf::from(value()?)),
            "--pilot-days" => {
                let text = value()?;
                days = Some(
                    text.parse::<i64>()
                        .ok()
                        .filter(|days| (1..=7).contains(days))
                        .ok_or(format!("--pilot-days must be a whole number from 1 to 7, got `{text}`"))?,
                );
            }
            other => return Err(format!("unknown argument `{other}`; {PACKET_USAGE}")),
        }
    }
    let missing = |what: &str| format!("{what} is required; {PACKET_USAGE}");
    Ok(PacketArgs {
        review: review.ok_or_else(|| missing("--review"))?,
        out: out.ok_or_else(|| missing("--out"))?,
        pilot_days: days,
    })
}

/// Creates `path` for the owner only (mode 0600), refusing one that exists (or a symbolic link
/// where it would be): results are never written over anything.
pub fn create_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn both_bounds_are_required_and_checked() {
        let args = calibrate_args(&strings(&[
            "--max-threads",
            "100",
            "--max-cost-usd",
            "0.05",
            "--out",
            "/tmp/review.json",
        ]))
        .expect("valid");
        assert_eq!(args.bounds.max_threads, 100);
        assert_eq!(args.bounds.max_cost, Cost::parse("0.05").expect("cost"));
        assert!(!args.bounds.inbox_only && args.bounds.account.is_none());
        let error = calibrate_args(&strings(&["--max-threads", "100", "--out", "x"])).expect_err("no cost bound");
        assert!(error.starts_with("--max-cost-usd is required"), "{error}");
        let error = calibrate_args(&strings(&["--max-cost-usd", "1", "--out", "x"])).expect_err("no thread bound");
        assert!(error.starts_with("--max-threads is required"), "{error}");
        for bad in ["0", "2001", "ten", "-1"] {
            let error =
                calibrate_args(&strings(&["--max-threads", bad, "--max-cost-usd", "1", "--out", "x"])).expect_err(bad);
            assert!(error.starts_with("--max-threads must be"), "{error}");
        }
        for bad in ["-1", "inf", "0.0000001", "five"] {
            let error =
                calibrate_args(&strings(&["--max-threads", "5", "--max-cost-usd", bad, "--out", "x"])).expect_err(bad);
            assert!(error.starts_with("--max-cost-usd must be"), "{error}");
        }
        assert!(calibrate_args(&strings(&["--max-threads"])).is_err());
        assert!(calibrate_args(&strings(&["--everything"])).is_err());
        assert!(packet_args(&strings(&["--review", "a", "--out", "b", "--pilot-days", "8"])).is_err());
        assert_eq!(
            packet_args(&strings(&["--review", "a", "--out", "b", "--pilot-days", "7"]))
                .expect("valid")
                .pilot_days,
            Some(7)
        );
    }

    #[test]
    fn results_are_created_private_and_never_over_an_existing_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("steward-calibrate-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("review.json");
        create_private(&path).expect("created");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let error = create_private(&path).expect_err("exists");
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(dir.join("elsewhere.json"), &link).expect("symlink");
        assert!(create_private(&link).is_err(), "a symbolic link is never followed");
        assert!(!dir.join("elsewhere.json").exists());
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
