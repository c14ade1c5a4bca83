//! The email cost allowances: every automatic model request Email mode makes is charged against
//! USD 20 per UTC day and USD 200 per rolling 30 days. An operator may change either only
//! through `email.daily_cost` / `email.monthly_cost` in a reviewed `runtime/limits.yaml` under
//! `AGENT_CONFIG_DIR`, and only to a finite, non-negative amount. Usage a provider does not
//! report is charged at the request's ceiling. Time is a parameter: nothing here reads a clock.

use domain::run::Cost;
use serde::Deserialize;

/// USD 20 per UTC day.
pub const DEFAULT_DAILY: Cost = Cost::from_micros(20_000_000);
/// USD 200 per rolling 30 days.
pub const DEFAULT_MONTHLY: Cost = Cost::from_micros(200_000_000);
/// The rolling window of the monthly allowance.
pub const MONTH: jiff::SignedDuration = jiff::SignedDuration::from_hours(30 * 24);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LimitsError {
    #[error("runtime/limits.yaml is not valid: {0}")]
    Syntax(String),
    #[error("runtime/limits.yaml: `{field}` must be a finite, non-negative amount in USD with at most six decimals")]
    NotFinite { field: &'static str },
}

/// The allowances in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowances {
    pub daily: Cost,
    pub monthly: Cost,
}

impl Default for Allowances {
    fn default() -> Allowances {
        Allowances {
            daily: DEFAULT_DAILY,
            monthly: DEFAULT_MONTHLY,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    #[serde(default)]
    email: Option<EmailLimits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailLimits {
    daily_cost: Option<f64>,
    monthly_cost: Option<f64>,
}

fn amount(value: f64, field: &'static str) -> Result<Cost, LimitsError> {
    if !value.is_finite() || value < 0.0 {
        return Err(LimitsError::NotFinite { field });
    }
    // The shortest decimal that reads back as `value`, checked by the same rule as every cost.
    Cost::parse(&format!("{value}")).map_err(|_| LimitsError::NotFinite { field })
}

impl Allowances {
    /// The allowances with the overlay `yaml` (the text of `runtime/limits.yaml`) applied.
    pub fn with_overlay(yaml: &str) -> Result<Allowances, LimitsError> {
        let file: LimitsFile = serde_saphyr::from_str(yaml).map_err(|error| LimitsError::Syntax(error.to_string()))?;
        let mut allowances = Allowances::default();
        if let Some(email) = file.email {
            if let Some(daily) = email.daily_cost {
                allowances.daily = amount(daily, "email.daily_cost")?;
            }
            if let Some(monthly) = email.monthly_cost {
                allowances.monthly = amount(monthly, "email.monthly_cost")?;
            }
        }
        Ok(allowances)
    }
}

/// One charge: when, and how much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charge {
    pub at: jiff::Timestamp,
    pub cost: Cost,
}

/// What a request is charged: the provider's reported cost, or, when it reports none, the most
/// the request could have cost.
pub fn charge_for(reported: Option<Cost>, ceiling: Cost) -> Cost {
    reported.unwrap_or(ceiling)
}

/// Whether automatic assessment may spend now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Both allowances have room for a request costing at most the ceiling.
    Open,
    /// Today's (UTC) allowance is spent; new mail waits unassessed until the next UTC day.
    DailySpent,
    /// The rolling 30-day allowance is spent.
    MonthlySpent,
}

fn total(charges: impl Iterator<Item = Cost>) -> i64 {
    charges.map(Cost::micros).fold(0i64, i64::saturating_add)
}

/// The standing at `now`, given the charges so far and the ceiling of the next request: a
/// request that could take either allowance over its amount waits.
pub fn standing(allowances: Allowances, charges: &[Charge], now: jiff::Timestamp, ceiling: Cost) -> Standing {
    let day_start = now
        .to_zoned(jiff::tz::TimeZone::UTC)
        .start_of_day()
        .map_or(now, |start| start.timestamp());
    let month_start = now.checked_sub(MONTH).unwrap_or(now);
    let today = total(
        charges
            .iter()
            .filter(|charge| charge.at >= day_start && charge.at <= now)
            .map(|charge| charge.cost),
    );
    let month = total(
        charges
            .iter()
            .filter(|charge| charge.at > month_start && charge.at <= now)
            .map(|charge| charge.cost),
    );
    if month.saturating_add(ceiling.micros()) > allowances.monthly.micros() {
        Standing::MonthlySpent
    } else if today.saturating_add(ceiling.micros()) > allowances.daily.micros() {
        Standing::DailySpent
    } else {
        Standing::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(text: &str) -> Cost {
        Cost::parse(text).expect("amount")
    }

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().expect("instant")
    }

    #[test]
    fn the_overlay_changes_only_what_it_names_and_refuses_what_is_not_finite() {
        assert_eq!(Allowances::with_overlay("{}"), Ok(Allowances::default()));
        let both = Allowances::with_overlay("email:\n  daily_cost: 5.5\n  monthly_cost: 50\n").expect("valid");
        assert_eq!((both.daily, both.monthly), (usd("5.5"), usd("50")));
        let one = Allowances::with_overlay("email:\n  daily_cost: 0\n").expect("valid");
        assert_eq!((one.daily, one.monthly), (usd("0"), DEFAULT_MONTHLY));
        for bad in [".inf", "-.inf", ".nan", "-1", "0.0000001"] {
            let error = Allowances::with_overlay(&format!("email:\n  daily_cost: {bad}\n")).expect_err(bad);
            assert!(
                matches!(
                    error,
                    LimitsError::NotFinite {
                        field: "email.daily_cost"
                    } | LimitsError::Syntax(_)
                ),
                "{bad}: {error:?}"
            );
        }
        let error = Allowances::with_overlay("email:\n  monthly_cost: .inf\n").expect_err("infinite");
        assert!(
            matches!(
                error,
                LimitsError::NotFinite {
                    field: "email.monthly_cost"
                } | LimitsError::Syntax(_)
            ),
            "{error:?}"
        );
        assert!(matches!(
            Allowances::with_overlay("email:\n  daily: 5\n"),
            Err(LimitsError::Syntax(_))
        ));
        assert!(matches!(
            Allowances::with_overlay("email:\n  daily_cost: twenty\n"),
            Err(LimitsError::Syntax(_))
        ));
    }

    #[test]
    fn assessment_stops_at_the_daily_cap_and_resumes_the_next_utc_day() {
        let allowances = Allowances::default();
        let ceiling = usd("0.5");
        let mut charges = Vec::new();
        let mut now = at("2026-11-24T08:00:00Z");
        // Requests whose provider reports nothing are charged their ceiling.
        while standing(allowances, &charges, now, ceiling) == Standing::Open {
            charges.push(Charge {
                at: now,
                cost: charge_for(None, ceiling),
            });
            now = now.checked_add(jiff::SignedDuration::from_mins(1)).expect("later");
        }
        assert_eq!(charges.len(), 40, "USD 20 at USD 0.50 each");
        assert_eq!(standing(allowances, &charges, now, ceiling), Standing::DailySpent);
        assert_eq!(
            standing(allowances, &charges, at("2026-11-24T23:59:59Z"), ceiling),
            Standing::DailySpent
        );
        assert_eq!(
            standing(allowances, &charges, at("2026-11-25T00:00:00Z"), ceiling),
            Standing::Open
        );
        // A reported cost is charged as reported.
        assert_eq!(charge_for(Some(usd("0.01")), ceiling), usd("0.01"));
    }

    #[test]
    fn the_monthly_cap_is_a_rolling_thirty_days() {
        let allowances = Allowances::default();
        let ceiling = usd("1");
        // USD 19.50 on each of ten days: within every day's USD 20, USD 195 in all.
        let charges: Vec<Charge> = (0..10)
            .map(|day| Charge {
                at: at("2026-11-01T12:00:00Z")
                    .checked_add(jiff::SignedDuration::from_hours(24 * day))
                    .expect("later"),
                cost: usd("19.5"),
            })
            .collect();
        let day_eleven = at("2026-11-11T12:00:00Z");
        assert_eq!(standing(allowances, &charges, day_eleven, ceiling), Standing::Open);
        let mut more = charges.clone();
        more.push(Charge {
            at: day_eleven,
            cost: usd("4.5"),
        });
        assert_eq!(
            standing(allowances, &more, day_eleven, ceiling),
            Standing::MonthlySpent,
            "USD 199.50 spent: one more dollar would pass USD 200"
        );
        // Thirty days after the first charge, it no longer counts.
        assert_eq!(
            standing(allowances, &more, at("2026-12-01T12:00:01Z"), ceiling),
            Standing::Open
        );
    }
}
