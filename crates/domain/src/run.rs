//! Run states. A session has at most one active run; the database enforces it with a partial
//! unique index over the active states listed here.

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Queued,
    Running,
    WaitingApproval,
    WaitingInput,
    Completed,
    Failed,
    Cancelled,
}

impl RunState {
    pub const ALL: [RunState; 7] = [
        RunState::Queued,
        RunState::Running,
        RunState::WaitingApproval,
        RunState::WaitingInput,
        RunState::Completed,
        RunState::Failed,
        RunState::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Running => "running",
            RunState::WaitingApproval => "waiting_approval",
            RunState::WaitingInput => "waiting_input",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<RunState> {
        RunState::ALL.into_iter().find(|state| state.as_str() == text)
    }

    /// What the client shows under the title: `needs_approval`, `needs_answer`, `working` while
    /// active; the state itself once terminal.
    pub const fn client_status(self) -> &'static str {
        match self {
            RunState::Queued | RunState::Running => "working",
            RunState::WaitingApproval => "needs_approval",
            RunState::WaitingInput => "needs_answer",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }

    /// Completed, failed and cancelled are terminal; every other state is active.
    pub const fn is_active(self) -> bool {
        !matches!(self, RunState::Completed | RunState::Failed | RunState::Cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_states_are_exactly_the_three_outcomes() {
        let terminal: Vec<&str> = RunState::ALL
            .into_iter()
            .filter(|s| !s.is_active())
            .map(RunState::as_str)
            .collect();
        assert_eq!(terminal, ["completed", "failed", "cancelled"]);
        for state in RunState::ALL {
            assert_eq!(RunState::parse(state.as_str()), Some(state));
            assert_eq!(
                serde_json::json!(state),
                serde_json::json!(state.as_str()),
                "the wire spelling"
            );
        }
    }
}

/// A user message, checked: its text trimmed (none when blank) and its attachments distinct;
/// never both empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserMessage {
    pub text: Option<String>,
    pub attachments: Vec<crate::ids::ArtifactId>,
}

/// The owner's answer to the question a run asked, trimmed and not blank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub question_id: uuid::Uuid,
    pub text: String,
}

/// A non-negative amount of money in millionths of a currency unit, parsed from a decimal string
/// such as `"1"` or `"0.25"` (at most six fractional digits). Fixed-point, so limits compare
/// exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Cost(i64);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not a non-negative decimal with at most six fractional digits")]
pub struct CostError(String);

impl Cost {
    pub const fn from_micros(micros: i64) -> Cost {
        Cost(micros)
    }

    pub const fn micros(self) -> i64 {
        self.0
    }

    pub fn parse(text: &str) -> Result<Cost, CostError> {
        let error = || CostError(text.to_owned());
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |part: &str| part.chars().all(|c| c.is_ascii_digit());
        // At most 12 whole digits, as the schema's pattern says (far beyond any real budget).
        if whole.is_empty()
            || whole.len() > 12
            || !digits(whole)
            || !digits(fraction)
            || fraction.len() > 6
            || text.ends_with('.')
        {
            return Err(error());
        }
        let whole: i64 = whole.parse().map_err(|_| error())?;
        let fraction: i64 = format!("{fraction:0<6}").parse().map_err(|_| error())?;
        whole
            .checked_mul(1_000_000)
            .and_then(|micros| micros.checked_add(fraction))
            .map(Cost)
            .ok_or_else(error)
    }
}

impl std::fmt::Display for Cost {
    /// The shortest decimal form: `1`, `0.25`, `0.000001`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (whole, fraction) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let fraction = format!("{fraction:06}");
            write!(f, "{whole}.{}", fraction.trim_end_matches('0'))
        }
    }
}

/// Per-run limits. Exceeding the timeout cancels the run with reason `deadline`; exceeding any
/// other limit fails it with a code naming the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    pub max_steps: u32,
    pub max_model_calls: u32,
    pub max_tool_calls: u32,
    pub max_cost: Cost,
    pub run_timeout_seconds: u32,
}

/// How long a run may wait for the owner (an approval or a question) unless its agent or schedule
/// says otherwise: a day, what people expect of an approval on their phone. Waiting does not count
/// towards the run's `run_timeout_seconds`; when it passes, the run is cancelled (`deadline`).
pub const DEFAULT_WAIT_TIMEOUT_SECONDS: u32 = 86_400;
/// The longest wait for the owner an agent or a schedule may set: 30 days.
pub const MAX_WAIT_TIMEOUT_SECONDS: u32 = 2_592_000;

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            max_steps: 16,
            max_model_calls: 16,
            max_tool_calls: 16,
            max_cost: Cost::from_micros(1_000_000),
            run_timeout_seconds: 300,
        }
    }
}

#[cfg(test)]
mod cost_tests {
    use super::*;

    #[test]
    fn costs_parse_exactly_and_print_shortest() {
        assert_eq!(Cost::parse("1"), Ok(Cost::from_micros(1_000_000)));
        assert_eq!(Cost::parse("0.25"), Ok(Cost::from_micros(250_000)));
        assert_eq!(Cost::parse("12.000001"), Ok(Cost::from_micros(12_000_001)));
        for bad in ["", "-1", "1.", ".5", "1.1234567", "1e3", "abc", "1.2.3", " 1"] {
            assert!(Cost::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Cost::from_micros(250_000).to_string(), "0.25");
        assert_eq!(Cost::from_micros(3_000_000).to_string(), "3");
        assert_eq!(Cost::from_micros(1).to_string(), "0.000001");
    }
}
