//! The schedule of a CronFederatedHPA rule: a five-field cron expression (or an `@daily`-style
//! descriptor) read in an IANA time zone. Admission validates with it and the controller plans with
//! it, so what is accepted is what runs.
//!
//! Zones come from the time zone database compiled into the binary (as Karmada's `time/tzdata`), so
//! the answer does not depend on the machine; the zone of a rule without `timeZone` (the controller's
//! own) is the caller's to pass in.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::{TimeZone, TimeZoneDatabase};

/// What the schedule accepts, for error messages.
pub const ACCEPTED_SCHEDULE: &str = "five fields \"minute hour day-of-month month day-of-week\", e.g. \"0 8 * * 1-5\" or \"*/15 * * * *\", or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly";

/// Why a rule's schedule or zone is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("invalid cron format: {reason}; accepted: {ACCEPTED_SCHEDULE}")]
    Schedule { reason: String },
    #[error(
        "unknown time zone {zone:?}; accepted: an IANA time zone name such as \"UTC\", \"Europe/Paris\" or \"Asia/Shanghai\""
    )]
    TimeZone { zone: String },
}

/// A parsed schedule in its zone.
#[derive(Debug, Clone)]
pub struct RuleSchedule {
    cron: Cron,
    zone: TimeZone,
}

/// The cron expression alone (minute granularity: no seconds or years field).
pub fn parse_expression(schedule: &str) -> Result<Cron, ScheduleError> {
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    // robfig/cron's @midnight, which croner does not name, is @daily.
    let schedule = if schedule.trim().eq_ignore_ascii_case("@midnight") {
        "@daily"
    } else {
        schedule
    };
    parser.parse(schedule).map_err(|e| ScheduleError::Schedule {
        reason: e.to_string(),
    })
}

/// The zone named `name`, from the compiled-in database.
pub fn zone(name: &str) -> Result<TimeZone, ScheduleError> {
    // The database answers "" and "local" too; neither is a zone a rule can name.
    if name.is_empty() || name.eq_ignore_ascii_case("local") {
        return Err(ScheduleError::TimeZone {
            zone: name.to_string(),
        });
    }
    TimeZoneDatabase::bundled()
        .get(name)
        .map_err(|_| ScheduleError::TimeZone {
            zone: name.to_string(),
        })
}

impl RuleSchedule {
    /// `schedule` in the zone `time_zone` names, or in `default_zone` when the rule names none.
    pub fn parse(
        schedule: &str,
        time_zone: Option<&str>,
        default_zone: &TimeZone,
    ) -> Result<Self, ScheduleError> {
        let cron = parse_expression(schedule)?;
        let zone = match time_zone {
            Some(name) => zone(name)?,
            None => default_zone.clone(),
        };
        Ok(Self { cron, zone })
    }

    /// The first time strictly after `after` the schedule fires; `None` when it never does again
    /// (e.g. `0 0 30 2 *`).
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let zoned = after.to_zoned(self.zone.clone());
        self.cron
            .find_next_occurrence(&zoned, false)
            .ok()
            .map(|next| next.timestamp())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next(schedule: &str, zone: Option<&str>, after: &str) -> Option<String> {
        RuleSchedule::parse(schedule, zone, &TimeZone::UTC)
            .unwrap()
            .next_after(at(after))
            .map(|t| t.to_string())
    }

    #[test]
    fn next_fire_times() {
        let cases: &[(&str, Option<&str>, &str, Option<&str>)] = &[
            // every minute: the next minute boundary, never the current instant
            (
                "* * * * *",
                None,
                "2026-03-01T10:00:00Z",
                Some("2026-03-01T10:01:00Z"),
            ),
            (
                "* * * * *",
                None,
                "2026-03-01T10:00:30.5Z",
                Some("2026-03-01T10:01:00Z"),
            ),
            (
                "*/15 * * * *",
                None,
                "2026-03-01T10:07:00Z",
                Some("2026-03-01T10:15:00Z"),
            ),
            (
                "0 8 * * 1-5",
                None,
                "2026-03-06T09:00:00Z",
                Some("2026-03-09T08:00:00Z"),
            ), // Fri → Mon
            (
                "@hourly",
                None,
                "2026-03-01T10:59:59Z",
                Some("2026-03-01T11:00:00Z"),
            ),
            (
                "@daily",
                None,
                "2026-03-01T10:00:00Z",
                Some("2026-03-02T00:00:00Z"),
            ),
            (
                "0 0 1 * *",
                None,
                "2026-01-31T12:00:00Z",
                Some("2026-02-01T00:00:00Z"),
            ),
            // day of month OR day of week when both are restricted (Vixie cron, as robfig/cron)
            (
                "0 0 13 * 5",
                None,
                "2026-03-01T00:00:00Z",
                Some("2026-03-06T00:00:00Z"),
            ),
            // 08:00 in Shanghai (UTC+8) is midnight UTC
            (
                "0 8 * * *",
                Some("Asia/Shanghai"),
                "2026-03-01T01:00:00Z",
                Some("2026-03-02T00:00:00Z"),
            ),
            // New York: EST (UTC-5) before 2026-03-08, EDT (UTC-4) after
            (
                "30 9 * * *",
                Some("America/New_York"),
                "2026-03-07T15:00:00Z",
                Some("2026-03-08T13:30:00Z"),
            ),
            (
                "30 9 * * *",
                Some("America/New_York"),
                "2026-03-06T12:00:00Z",
                Some("2026-03-06T14:30:00Z"),
            ),
            // 02:30 does not exist in New York on 2026-03-08: it runs when the gap ends, 03:00 EDT
            (
                "30 2 * * *",
                Some("America/New_York"),
                "2026-03-08T05:00:00Z",
                Some("2026-03-08T07:00:00Z"),
            ),
            // never again
            ("0 0 30 2 *", None, "2026-01-01T00:00:00Z", None),
        ];
        for (schedule, zone, after, expected) in cases {
            assert_eq!(
                next(schedule, *zone, after).as_deref(),
                *expected,
                "{schedule} in {zone:?} after {after}"
            );
        }
    }

    #[test]
    fn the_default_zone_applies_without_time_zone() {
        let tokyo = zone("Asia/Tokyo").unwrap();
        let schedule = RuleSchedule::parse("0 9 * * *", None, &tokyo).unwrap();
        assert_eq!(
            schedule.next_after(at("2026-03-01T01:00:00Z")),
            Some(at("2026-03-02T00:00:00Z"))
        );
    }

    #[test]
    fn bad_schedules_and_zones_are_refused() {
        for bad in [
            "",
            "* * *",
            "* * * * * *",
            "61 * * * *",
            "* 24 * * *",
            "* * 32 * *",
            "* * * 13 *",
            "* * * * 8",
            "x * * * *",
            "@sometimes",
        ] {
            assert!(
                matches!(parse_expression(bad), Err(ScheduleError::Schedule { .. })),
                "{bad:?} accepted"
            );
        }
        for good in [
            "0 8 * * 1-5",
            "*/5 * * * *",
            "0 0 1,15 * *",
            "0 9 * JAN-MAR MON",
            "@weekly",
            "@midnight",
        ] {
            assert!(parse_expression(good).is_ok(), "{good:?} refused");
        }
        for bad in ["Mars/Olympus", "", "local", "Asia/"] {
            assert_eq!(
                zone(bad).err(),
                Some(ScheduleError::TimeZone {
                    zone: bad.to_string()
                })
            );
        }
        for good in [
            "UTC",
            "Asia/Shanghai",
            "Europe/Paris",
            "America/Argentina/Buenos_Aires",
        ] {
            assert!(zone(good).is_ok(), "{good} refused");
        }
    }
}
