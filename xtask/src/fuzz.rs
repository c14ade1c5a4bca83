//! `cargo xtask fuzz [--minutes N]`: the property tests of every parser of untrusted input
//! (`tests/fuzz`), run round after round with fresh random seeds and many more cases than the
//! suite's short pass, until N minutes (5 by default) have passed or one fails. A failing input
//! is shrunk and its seed kept in `tests/proptest-regressions/`, where every later run (the
//! suite's too) tries it first: commit that file with the fix.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Cases per property in one round: a round takes seconds, so the deadline is kept closely.
const CASES_PER_ROUND: u32 = 2000;

fn parse(args: &[String]) -> anyhow::Result<u64> {
    Ok(match args {
        [] => 5,
        [flag, value] if flag == "--minutes" => value
            .parse::<u64>()
            .ok()
            .filter(|minutes| *minutes > 0)
            .with_context(|| format!("--minutes must be a whole number of minutes, not `{value}`"))?,
        _ => bail!("usage: cargo xtask fuzz [--minutes N]"),
    })
}

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let minutes = parse(&args)?;
    let test = |cases: u32| {
        let mut command = crate::cargo();
        command
            .args(["test", "--locked", "--quiet", "-p", "steward-tests", "--test", "fuzz"])
            .env("PROPTEST_CASES", cases.to_string());
        command
    };
    let built = crate::cargo()
        .args(["test", "--locked", "-p", "steward-tests", "--test", "fuzz", "--no-run"])
        .status()
        .context("build the property tests")?;
    if !built.success() {
        bail!("the property tests do not build");
    }
    let deadline = Instant::now() + Duration::from_secs(minutes * 60);
    let mut rounds = 0u64;
    while Instant::now() < deadline {
        let status = test(CASES_PER_ROUND).status().context("run the property tests")?;
        rounds += 1;
        if !status.success() {
            eprintln!(
                "xtask: fuzz: round {rounds} found a failing input; its seed is kept in tests/proptest-regressions/ and is tried first from now on"
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    println!("fuzz: {rounds} rounds of {CASES_PER_ROUND} cases per property in {minutes} min, no failing input");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn minutes_default_to_five_and_refuse_what_is_not_a_positive_number() {
        assert_eq!(super::parse(&[]).expect("default"), 5);
        assert_eq!(super::parse(&["--minutes".into(), "30".into()]).expect("thirty"), 30);
        assert!(super::parse(&["--minutes".into(), "0".into()]).is_err());
        assert!(super::parse(&["30".into()]).is_err());
    }
}
