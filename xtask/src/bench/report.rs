//! The report: one row per figure, each beside its reference and held to its target.

use super::*;

/// What a figure is held to.
#[derive(Clone, Copy)]
pub(super) enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

/// One line of the report.
pub(super) struct Row {
    pub(super) measurement: String,
    pub(super) value: String,
    pub(super) reference: String,
    /// The compared figure (a ratio or an absolute value) and what it is held to.
    pub(super) goal: Option<(f64, Goal, String)>,
}

impl Row {
    pub(super) fn new(measurement: impl Into<String>, value: impl Into<String>) -> Self {
        Row {
            measurement: measurement.into(),
            value: value.into(),
            reference: String::new(),
            goal: None,
        }
    }

    pub(super) fn reference(mut self, reference: impl Into<String>) -> Self {
        self.reference = reference.into();
        self
    }

    pub(super) fn goal(mut self, figure: f64, goal: Goal, text: impl Into<String>) -> Self {
        self.goal = Some((figure, goal, text.into()));
        self
    }

    /// Share of the target reached, in percent.
    pub(super) fn reached(&self) -> Option<f64> {
        let (figure, goal, _) = self.goal.as_ref()?;
        Some(match *goal {
            Goal::AtLeast(target) => 100.0 * figure / target,
            Goal::AtMost(target) => 100.0 * target / figure.max(f64::MIN_POSITIVE),
        })
    }
}

#[derive(Default)]
pub(super) struct Report {
    pub(super) rows: Vec<Row>,
}

impl Report {
    pub(super) fn push(&mut self, row: Row) {
        println!("{}", self.line(&row));
        self.rows.push(row);
    }

    pub(super) fn missed(&mut self, measurement: &str, error: &anyhow::Error) {
        self.push(Row::new(measurement, format!("not measured: {error:#}")));
    }

    pub(super) fn line(&self, row: &Row) -> String {
        let (target, met) = match (&row.goal, row.reached()) {
            (Some((_, _, text)), Some(reached)) => (text.as_str(), if reached >= 100.0 { "yes" } else { "no" }),
            _ => ("", ""),
        };
        format!(
            "| {} | {} | {} | {target} | {met} |",
            row.measurement, row.value, row.reference
        )
    }

    pub(super) fn table(&self) -> String {
        let mut table =
            String::from("| measurement | value | reference (same run) | target | met |\n|---|---|---|---|---|\n");
        for row in &self.rows {
            let _ = writeln!(table, "{}", self.line(row));
        }
        table
    }
}
