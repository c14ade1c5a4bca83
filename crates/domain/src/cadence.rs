//! Schedule cadence: when a `DAILY` schedule fires, in an IANA time zone, across DST.
//!
//! Rules for the local wall time on a given date:
//! - it exists once: that instant;
//! - it does not exist (a gap, clocks jump forward): the first instant after the gap, i.e. the
//!   transition itself (02:30 in a 02:00→03:00 gap fires at 03:00 local);
//! - it exists twice (a fold, clocks fall back): once, at the earlier instant.
//!
//! Time zones are values: looking one up by name happens at the edge, never here.

use jiff::Timestamp;
use jiff::civil::{Date, Time};
use jiff::tz::{AmbiguousOffset, TimeZone};

/// The tool scopes a schedule may request: the mail read and write use scopes.
pub const SCHEDULE_SCOPES: [&str; 2] = ["mcp.mail_read.use", "mcp.mail_write.use"];

/// A `local_time` in `HH:MM:SS`.
pub fn parse_local_time(text: &str) -> Option<Time> {
    let bytes = text.as_bytes();
    let shaped = bytes.len() == 8
        && bytes[2] == b':'
        && bytes[5] == b':'
        && [0, 1, 3, 4, 6, 7].iter().all(|index| bytes[*index].is_ascii_digit());
    if !shaped {
        return None;
    }
    let field = |range: std::ops::Range<usize>| text[range].parse::<i8>().ok();
    Time::new(field(0..2)?, field(3..5)?, field(6..8)?, 0).ok()
}

/// A daily cadence at a local wall time in a time zone.
#[derive(Clone, Debug)]
pub struct Daily {
    pub local_time: Time,
    pub zone: TimeZone,
}

impl Daily {
    /// The instant the schedule fires on `date` (by the rules above).
    pub fn instant_on(&self, date: Date) -> Timestamp {
        let civil = date.to_datetime(self.local_time);
        let ambiguous = self.zone.to_ambiguous_timestamp(civil);
        match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { offset } | AmbiguousOffset::Fold { before: offset, .. } => {
                offset.to_timestamp(civil).unwrap_or(Timestamp::MAX)
            }
            AmbiguousOffset::Gap { after, .. } => {
                // Read with the later offset the time lands just before the transition; the
                // next transition is the end of the gap.
                let before_gap = after.to_timestamp(civil).unwrap_or(Timestamp::MIN);
                self.zone
                    .following(before_gap)
                    .next()
                    .map(|transition| transition.timestamp())
                    .unwrap_or(before_gap)
            }
        }
    }

    /// The first firing strictly after `after`.
    pub fn next_after(&self, after: Timestamp) -> Timestamp {
        let today = after.to_zoned(self.zone.clone()).date();
        let mut date = today.yesterday().unwrap_or(today);
        loop {
            let instant = self.instant_on(date);
            if instant > after {
                return instant;
            }
            match date.tomorrow() {
                Ok(next) => date = next,
                Err(_) => return Timestamp::MAX,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> TimeZone {
        TimeZone::get(name).expect("zone in the tz database")
    }

    #[test]
    fn local_times_are_strict_hh_mm_ss() {
        assert_eq!(parse_local_time("07:30:00"), Some(Time::constant(7, 30, 0, 0)));
        for bad in [
            "7:30:00",
            "07:30",
            "24:00:00",
            "07:60:00",
            "07:30:0a",
            "07-30-00",
            " 07:30:00",
        ] {
            assert_eq!(parse_local_time(bad), None, "{bad}");
        }
    }

    /// The independent reference: DST transitions for 2026 and 2027 written out by hand (UTC
    /// instant, offset in seconds from then on) with the offset in force on 2026-01-01.
    struct Reference {
        initial: i32,
        /// (UTC second, offset from then on), parsed once.
        parsed: Vec<(i64, i32)>,
    }

    const H: i32 = 3600;

    fn reference(name: &str) -> Reference {
        let (initial, transitions): (i32, &[(&str, i32)]) = match name {
            "America/New_York" => (
                -5 * H,
                &[
                    ("2026-03-08T07:00:00Z", -4 * H),
                    ("2026-11-01T06:00:00Z", -5 * H),
                    ("2027-03-14T07:00:00Z", -4 * H),
                    ("2027-11-07T06:00:00Z", -5 * H),
                ],
            ),
            "Europe/London" => (
                0,
                &[
                    ("2026-03-29T01:00:00Z", H),
                    ("2026-10-25T01:00:00Z", 0),
                    ("2027-03-28T01:00:00Z", H),
                    ("2027-10-31T01:00:00Z", 0),
                ],
            ),
            // Half-hour shifts: +11 in summer, +10:30 in winter.
            "Australia/Lord_Howe" => (
                11 * H,
                &[
                    ("2026-04-04T15:00:00Z", 10 * H + H / 2),
                    ("2026-10-03T15:30:00Z", 11 * H),
                    ("2027-04-03T15:00:00Z", 10 * H + H / 2),
                    ("2027-10-02T15:30:00Z", 11 * H),
                ],
            ),
            "Asia/Kolkata" => (5 * H + H / 2, &[]),
            other => panic!("no reference for {other}"),
        };
        let parsed = transitions
            .iter()
            .map(|(at, offset)| (at.parse::<Timestamp>().expect("instant").as_second(), *offset))
            .collect();
        Reference { initial, parsed }
    }

    impl Reference {
        fn transitions(&self) -> Vec<(i64, i32)> {
            self.parsed.clone()
        }

        fn offset_at(&self, second: i64) -> i32 {
            self.parsed
                .iter()
                .rev()
                .find(|(at, _)| *at <= second)
                .map_or(self.initial, |(_, offset)| *offset)
        }

        /// The firing instant of a local wall time (seconds since the epoch, read as UTC).
        fn resolve(&self, local: i64) -> i64 {
            let mut offsets = vec![self.initial];
            offsets.extend(self.parsed.iter().map(|(_, offset)| *offset));
            let mut valid: Vec<i64> = offsets
                .iter()
                .map(|offset| local - i64::from(*offset))
                .filter(|instant| i64::from(self.offset_at(*instant)) == local - instant)
                .collect();
            valid.sort();
            valid.dedup();
            if let Some(earliest) = valid.first() {
                return *earliest;
            }
            // A gap: the transition whose jump skips this wall time.
            let mut previous = self.initial;
            for &(at, offset) in &self.parsed {
                let (gap_start, gap_end) = (at + i64::from(previous), at + i64::from(offset));
                if gap_start <= local && local < gap_end {
                    return at;
                }
                previous = offset;
            }
            panic!("local time {local} resolves nowhere");
        }
    }

    fn local_seconds(date: Date, time: Time) -> i64 {
        date.to_datetime(time)
            .to_zoned(TimeZone::UTC)
            .expect("utc")
            .timestamp()
            .as_second()
    }

    #[test]
    fn every_firing_matches_the_reference_across_two_years_of_transitions() {
        let mut compared = 0;
        for name in [
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "Asia/Kolkata",
        ] {
            let reference = reference(name);
            let tz = zone(name);
            let transition_days: Vec<Date> = reference
                .transitions()
                .iter()
                .flat_map(|(at, _)| {
                    let day = Timestamp::from_second(*at)
                        .expect("instant")
                        .to_zoned(zone(name))
                        .date();
                    [day.yesterday().expect("day"), day, day.tomorrow().expect("day")]
                })
                .collect();
            let mut date = Date::constant(2026, 1, 1);
            while date <= Date::constant(2027, 12, 31) {
                // Every quarter hour on ordinary days, every minute around transitions.
                let step = if transition_days.contains(&date) { 60 } else { 15 * 60 };
                for second in (0..86_400).step_by(step) {
                    let time = Time::new((second / 3600) as i8, (second / 60 % 60) as i8, 0, 0).expect("time");
                    let daily = Daily {
                        local_time: time,
                        zone: tz.clone(),
                    };
                    let computed = daily.instant_on(date).as_second();
                    let expected = reference.resolve(local_seconds(date, time));
                    assert_eq!(computed, expected, "{name} {date} {time}");
                    compared += 1;
                }
                date = date.tomorrow().expect("date");
            }
        }
        assert!(compared > 250_000, "compared {compared} firings");
    }

    #[test]
    fn gaps_fire_at_the_first_instant_after_and_folds_fire_once_at_the_earlier_instant() {
        let new_york = Daily {
            local_time: Time::constant(2, 30, 0, 0),
            zone: zone("America/New_York"),
        };
        // 2026-03-08 02:30 does not exist: clocks go from 02:00 EST to 03:00 EDT.
        let spring = new_york.instant_on(Date::constant(2026, 3, 8));
        assert_eq!(spring.to_string(), "2026-03-08T07:00:00Z");

        let fold = Daily {
            local_time: Time::constant(1, 30, 0, 0),
            zone: zone("America/New_York"),
        };
        // 2026-11-01 01:30 happens twice: EDT (05:30Z) then EST (06:30Z); it fires at the first.
        let autumn = fold.instant_on(Date::constant(2026, 11, 1));
        assert_eq!(autumn.to_string(), "2026-11-01T05:30:00Z");
        let next = fold.next_after(autumn);
        assert_eq!(
            next.to_string(),
            "2026-11-02T06:30:00Z",
            "the repeated hour does not fire a second time"
        );

        let lord_howe = Daily {
            local_time: Time::constant(2, 15, 0, 0),
            zone: zone("Australia/Lord_Howe"),
        };
        // A half-hour gap: 02:00 → 02:30 on 2026-10-04.
        assert_eq!(
            lord_howe.instant_on(Date::constant(2026, 10, 4)).to_string(),
            "2026-10-03T15:30:00Z"
        );
    }

    #[test]
    fn next_after_walks_day_by_day() {
        let daily = Daily {
            local_time: Time::constant(7, 0, 0, 0),
            zone: zone("Europe/London"),
        };
        let start: Timestamp = "2026-03-27T12:00:00Z".parse().expect("instant");
        let mut fired = Vec::new();
        let mut cursor = start;
        for _ in 0..4 {
            cursor = daily.next_after(cursor);
            fired.push(cursor.to_string());
        }
        assert_eq!(
            fired,
            [
                "2026-03-28T07:00:00Z",
                "2026-03-29T06:00:00Z",
                "2026-03-30T06:00:00Z",
                "2026-03-31T06:00:00Z"
            ]
        );
        assert_eq!(
            daily
                .next_after("2026-03-28T07:00:00Z".parse().expect("instant"))
                .to_string(),
            "2026-03-29T06:00:00Z"
        );
    }
}
