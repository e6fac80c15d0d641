//! Purge modes as users write them: `Directly`, `Gracefully`, `Never`, and the legacy spellings `Immediately`
//! (= Directly) and `Graciously` (= Gracefully) that older Karmada releases used and old YAML still carries.
//!
//! The typed API only knows the current spelling, so a binding read from the API is normalized with
//! [`normalize_legacy_purge_modes`] before it is decoded; what the controllers write back is always the current
//! spelling.

use karmada_api::policy::PurgeMode;
use serde_json::Value;

/// A purge mode by name, accepting the legacy spellings; `None` for anything else.
pub fn parse_purge_mode(text: &str) -> Option<PurgeMode> {
    match text {
        "Directly" | "Immediately" => Some(PurgeMode::Directly),
        "Gracefully" | "Graciously" => Some(PurgeMode::Gracefully),
        "Never" => Some(PurgeMode::Never),
        _ => None,
    }
}

/// Rewrites legacy purge-mode spellings in a binding (`spec.failover.{application,cluster}.purgeMode` and every
/// `spec.gracefulEvictionTasks[*].purgeMode`) to the current ones. Unknown values are left for the decoder to
/// reject with its own message.
pub fn normalize_legacy_purge_modes(binding: &mut Value) {
    let fix = |slot: Option<&mut Value>| {
        if let Some(slot) = slot
            && let Some(mode) = slot.as_str().and_then(parse_purge_mode)
        {
            *slot = Value::String(mode.as_str().to_string());
        }
    };
    fix(binding.pointer_mut("/spec/failover/application/purgeMode"));
    fix(binding.pointer_mut("/spec/failover/cluster/purgeMode"));
    if let Some(tasks) = binding
        .pointer_mut("/spec/gracefulEvictionTasks")
        .and_then(Value::as_array_mut)
    {
        for task in tasks {
            fix(task.get_mut("purgeMode"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn spellings() {
        let cases = [
            ("Directly", Some(PurgeMode::Directly)),
            ("Immediately", Some(PurgeMode::Directly)),
            ("Gracefully", Some(PurgeMode::Gracefully)),
            ("Graciously", Some(PurgeMode::Gracefully)),
            ("Never", Some(PurgeMode::Never)),
            ("never", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_purge_mode(text), expected, "{text}");
        }
    }

    #[test]
    fn legacy_spellings_are_rewritten_everywhere() {
        let mut binding = json!({"spec": {
            "failover": {"application": {"purgeMode": "Immediately"}, "cluster": {"purgeMode": "Graciously"}},
            "gracefulEvictionTasks": [
                {"fromCluster": "a", "purgeMode": "Graciously"},
                {"fromCluster": "b", "purgeMode": "Never"},
                {"fromCluster": "c", "purgeMode": "Bogus"},
            ],
        }});
        normalize_legacy_purge_modes(&mut binding);
        assert_eq!(
            binding["spec"]["failover"]["application"]["purgeMode"],
            "Directly"
        );
        assert_eq!(
            binding["spec"]["failover"]["cluster"]["purgeMode"],
            "Gracefully"
        );
        let tasks = &binding["spec"]["gracefulEvictionTasks"];
        assert_eq!(tasks[0]["purgeMode"], "Gracefully");
        assert_eq!(tasks[1]["purgeMode"], "Never");
        assert_eq!(tasks[2]["purgeMode"], "Bogus");
    }
}
