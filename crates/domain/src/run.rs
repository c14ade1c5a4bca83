//! Run states. A session has at most one active run; the database enforces it with a partial
//! unique index over the active states listed here.

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        }
    }
}
