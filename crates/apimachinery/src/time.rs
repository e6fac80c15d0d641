//! Time as Kubernetes shows it: kubectl-style ages (`5m`, `3h12m`, `2y45d`) and RFC 3339
//! timestamps with second precision in UTC. "Now" is always an argument.

use jiff::{SignedDuration, Timestamp};

const MINUTE: i64 = 60;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
const YEAR: i64 = 365 * DAY;

/// A duration as kubectl prints ages; sub-second parts are truncated toward zero.
pub fn human_duration(duration: SignedDuration) -> String {
    human_duration_seconds(duration.as_secs())
}

/// [`human_duration`] of a whole number of seconds. A clock skew of up to one second prints
/// `0s`; anything more negative is `<invalid>`.
pub fn human_duration_seconds(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 2 * MINUTE {
        return format!("{seconds}s");
    }
    let minutes = seconds / MINUTE;
    if minutes < 10 {
        return with_remainder(minutes, 'm', seconds % MINUTE, 's');
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = seconds / HOUR;
    if hours < 8 {
        return with_remainder(hours, 'h', minutes % 60, 'm');
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = seconds / DAY;
    if hours < 8 * 24 {
        return with_remainder(days, 'd', hours % 24, 'h');
    }
    if seconds < 2 * YEAR {
        return format!("{days}d");
    }
    let years = seconds / YEAR;
    if seconds < 8 * YEAR {
        return with_remainder(years, 'y', days % 365, 'd');
    }
    format!("{years}y")
}

fn with_remainder(major: i64, major_unit: char, minor: i64, minor_unit: char) -> String {
    if minor == 0 {
        format!("{major}{major_unit}")
    } else {
        format!("{major}{major_unit}{minor}{minor_unit}")
    }
}

/// The age of something created at `created`, as of `now`.
pub fn age(created: Timestamp, now: Timestamp) -> String {
    human_duration(now.duration_since(created))
}

/// `2026-11-29T18:04:07Z`: what `creationTimestamp` and friends hold.
pub fn format_timestamp(timestamp: Timestamp) -> String {
    timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses an RFC 3339 timestamp as found in object metadata.
pub fn parse_timestamp(text: &str) -> Result<Timestamp, jiff::Error> {
    text.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_like_kubectl() {
        let cases: &[(i64, &str)] = &[
            (-5, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (1, "1s"),
            (119, "119s"),
            (120, "2m"),
            (121, "2m1s"),
            (9 * MINUTE + 59, "9m59s"),
            (10 * MINUTE, "10m"),
            (10 * MINUTE + 30, "10m"),
            (3 * HOUR - 1, "179m"),
            (3 * HOUR, "3h"),
            (3 * HOUR + 12 * MINUTE, "3h12m"),
            (8 * HOUR - 1, "7h59m"),
            (8 * HOUR, "8h"),
            (47 * HOUR + 59 * MINUTE, "47h"),
            (48 * HOUR, "2d"),
            (2 * DAY + 5 * HOUR, "2d5h"),
            (8 * DAY - 1, "7d23h"),
            (8 * DAY, "8d"),
            (2 * YEAR - 1, "729d"),
            (2 * YEAR, "2y"),
            (2 * YEAR + 45 * DAY, "2y45d"),
            (8 * YEAR - 1, "7y364d"),
            (8 * YEAR, "8y"),
            (20 * YEAR + 100 * DAY, "20y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration_seconds(*seconds), *expected, "{seconds}s");
        }
        assert_eq!(human_duration(SignedDuration::from_millis(2500)), "2s");
        assert_eq!(human_duration(SignedDuration::from_millis(-1500)), "0s");
    }

    #[test]
    fn timestamps() {
        let ts = parse_timestamp("2026-11-29T18:04:07.123456Z").expect("valid");
        assert_eq!(format_timestamp(ts), "2026-11-29T18:04:07Z");
        let offset = parse_timestamp("2026-11-29T20:04:07+02:00").expect("valid");
        assert_eq!(format_timestamp(offset), "2026-11-29T18:04:07Z");
        let later = parse_timestamp("2026-11-29T18:09:07Z").expect("valid");
        assert_eq!(age(ts, later), "4m59s");
        assert!(parse_timestamp("yesterday").is_err());
    }
}
