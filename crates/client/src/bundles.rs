//! Tool activity bundles (client contract, Runtime 9): adjacent calls of one tool collapse into
//! one count-labelled bundle showing the highest risk among them. A bundle takes successful
//! calls; a fetch or search tool's bundle also takes its failed ones (rejected, unavailable or
//! failed). Anything else breaks a bundle: a message, another tool, an approval or question, a
//! queued or running call, a denial, an uncertain outcome.
//!
//! The same rule as the web client's (`web/public/app/bundles.js`), on the same vectors
//! (`tests/vectors/bundles.json`). [`Bundler`] takes a transcript one item at a time, as a
//! terminal shows a run while it happens; [`bundle`] takes a whole one.

use domain::approval::{InvocationState, Risk};

/// Whether `tool` fetches or searches (its last name part says so).
pub fn fetches_or_searches(tool: &str) -> bool {
    let last = tool.rsplit('.').next().unwrap_or(tool);
    last.contains("fetch") || last.contains("search")
}

/// Whether a call of `tool` in `status` may be part of a bundle.
pub fn bundleable(tool: &str, status: InvocationState) -> bool {
    status == InvocationState::Succeeded || (status == InvocationState::Failed && fetches_or_searches(tool))
}

/// Two or more calls of one tool, shown as one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub tool: String,
    pub count: u32,
    /// How many of them failed (only a fetch or search bundle has any).
    pub failed: u32,
    /// The highest risk among them (`None` when no call carried one).
    pub risk: Option<Risk>,
}

impl Bundle {
    /// `notes.list × 3 · done · low risk`, as the web client words it.
    pub fn label(&self) -> String {
        let done = if self.failed == 0 {
            "done".to_owned()
        } else {
            format!("{} done, {} failed", self.count - self.failed, self.failed)
        };
        let risk = self
            .risk
            .map(|risk| format!(" · {} risk", risk.as_str()))
            .unwrap_or_default();
        format!("{} × {} · {done}{risk}", self.tool, self.count)
    }
}

/// What is shown for the items: a bundle, or an item as it came.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown<T> {
    Bundle(Bundle),
    Item(T),
}

/// Gathers bundles from items given one at a time; what can be shown comes back as soon as it
/// is settled (a bundle when something breaks it, or at [`Bundler::finish`]).
#[derive(Debug)]
pub struct Bundler<T> {
    /// The call that may start a bundle, and the bundle so far.
    pending: Option<(T, Bundle)>,
}

impl<T> Default for Bundler<T> {
    fn default() -> Self {
        Bundler { pending: None }
    }
}

impl<T> Bundler<T> {
    /// The tool of the bundle being gathered, if any.
    pub fn gathering(&self) -> Option<&str> {
        self.pending.as_ref().map(|(_, bundle)| bundle.tool.as_str())
    }

    /// A tool call's outcome; `item` is what shows for it alone.
    pub fn call(&mut self, item: T, tool: &str, status: InvocationState, risk: Option<Risk>) -> Vec<Shown<T>> {
        if !bundleable(tool, status) {
            let mut shown = self.finish();
            shown.push(Shown::Item(item));
            return shown;
        }
        let failed = u32::from(status == InvocationState::Failed);
        if let Some((_, bundle)) = self.pending.as_mut().filter(|(_, bundle)| bundle.tool == tool) {
            bundle.count += 1;
            bundle.failed += failed;
            bundle.risk = bundle.risk.max(risk);
            return Vec::new();
        }
        let shown = self.finish();
        let bundle = Bundle {
            tool: tool.to_owned(),
            count: 1,
            failed,
            risk,
        };
        self.pending = Some((item, bundle));
        shown
    }

    /// Anything else (a message, an approval, a question, a queued or running call): it breaks
    /// the bundle.
    pub fn other(&mut self, item: T) -> Vec<Shown<T>> {
        let mut shown = self.finish();
        shown.push(Shown::Item(item));
        shown
    }

    /// What is still gathered: a bundle, or the one call that could have started one.
    pub fn finish(&mut self) -> Vec<Shown<T>> {
        match self.pending.take() {
            None => Vec::new(),
            Some((item, bundle)) if bundle.count == 1 => vec![Shown::Item(item)],
            Some((_, bundle)) => vec![Shown::Bundle(bundle)],
        }
    }
}

/// One item of a transcript, as far as bundles care.
#[derive(Clone, Debug, PartialEq)]
pub enum Activity<T> {
    /// A tool call with its current status.
    Call {
        item: T,
        tool: String,
        status: InvocationState,
        risk: Option<Risk>,
    },
    /// Anything else.
    Other(T),
}

/// A whole transcript's items as shown.
pub fn bundle<T>(items: impl IntoIterator<Item = Activity<T>>) -> Vec<Shown<T>> {
    let mut bundler = Bundler::default();
    let mut shown = Vec::new();
    for activity in items {
        shown.extend(match activity {
            Activity::Call {
                item,
                tool,
                status,
                risk,
            } => bundler.call(item, &tool, status, risk),
            Activity::Other(item) => bundler.other(item),
        });
    }
    shown.extend(bundler.finish());
    shown
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn the_shared_vectors_bundle_as_the_web_client_does() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/bundles.json");
        let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("vectors")).expect("json");
        let cases = vectors["cases"].as_array().expect("cases");
        assert!(cases.len() >= 8);
        for case in cases {
            let name = case["name"].as_str().expect("name");
            let items = case["items"].as_array().expect("items").iter().map(|item| {
                let kind = item["kind"].as_str().expect("kind").to_owned();
                if kind != "tool" {
                    return Activity::Other(kind);
                }
                let tool = item["tool"].as_str().expect("tool").to_owned();
                let status = item["status"].as_str().expect("status");
                let status = InvocationState::parse(status).expect("a status");
                let risk = item["risk"].as_str().map(|risk| Risk::parse(risk).expect("a risk"));
                Activity::Call {
                    item: format!("tool {tool} {}", status.as_str()),
                    tool,
                    status,
                    risk,
                }
            });
            let shown: Vec<String> = bundle(items)
                .into_iter()
                .map(|shown| match shown {
                    Shown::Item(line) => line,
                    Shown::Bundle(bundle) => format!(
                        "bundle {} x{} {} failed {}",
                        bundle.tool,
                        bundle.count,
                        bundle.failed,
                        bundle.risk.map_or("-", Risk::as_str)
                    ),
                })
                .collect();
            let expected: Vec<&str> = case["shown"]
                .as_array()
                .expect("shown")
                .iter()
                .map(|line| line.as_str().expect("a line"))
                .collect();
            assert_eq!(shown, expected, "{name}");
        }
    }

    #[test]
    fn a_bundles_label_says_how_many_how_many_failed_and_the_highest_risk() {
        let bundle = Bundle {
            tool: "notes.add".into(),
            count: 3,
            failed: 0,
            risk: Some(Risk::High),
        };
        assert_eq!(bundle.label(), "notes.add × 3 · done · high risk");
        let searched = Bundle {
            tool: "mcp.mail_read.search_threads".into(),
            count: 4,
            failed: 1,
            risk: None,
        };
        assert_eq!(searched.label(), "mcp.mail_read.search_threads × 4 · 3 done, 1 failed");
    }
}
