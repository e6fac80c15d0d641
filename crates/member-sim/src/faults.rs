//! Injected faults: what a member-sim is currently told to get wrong, and the CLI forms that
//! change it (`karmada member-sim fault ... <fault>`).
//!
//! Every fault is reversible: [`Faults::apply`] with [`Fault::Clear`] returns to normal service.
//! [`Faults`] serializes (camelCase JSON) so the CLI can leave it in a file the running
//! simulator polls.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::resource_metrics::Load;

/// The accepted forms, quoted in every parse error.
pub const ACCEPTED_FORMS: &str = "notready | unreachable | latency DURATION (e.g. 200ms, 2s) | \
     error-rate FRACTION (0..1, e.g. 0.5) | node-notready NODE | crash WORKLOAD | clear";

/// One fault command.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// `/readyz` and `/healthz` fail.
    NotReady,
    /// The API stops answering.
    Unreachable,
    /// Every API response is delayed by this many milliseconds.
    Latency { millis: u64 },
    /// This fraction of API requests fail with 500.
    ErrorRate(f64),
    /// The node reports Ready=False.
    NodeNotReady(String),
    /// The workload's pods stop being ready (`NAME` or `NAMESPACE/NAME` of the top owner).
    Crash(String),
    /// Pods a selector matches report this usage (`karmada member-sim load`).
    Load(Load),
    /// Remove every fault.
    Clear,
}

/// A fault command that does not parse; the message lists the accepted forms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid fault {input:?}: {problem}; accepted forms: {ACCEPTED_FORMS}")]
pub struct FaultParseError {
    pub input: String,
    pub problem: String,
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let words: Vec<&str> = input.split_whitespace().collect();
        Fault::from_words(&words)
    }
}

impl Fault {
    /// Parses the CLI arguments after `fault`, e.g. `["latency", "200ms"]`.
    pub fn from_words(words: &[&str]) -> Result<Self, FaultParseError> {
        let input = words.join(" ");
        let error = |problem: &str| FaultParseError {
            input: input.clone(),
            problem: problem.to_string(),
        };
        let argument = |what: &str| -> Result<&str, FaultParseError> {
            match words {
                [_, value] => Ok(value),
                [_] => Err(error(&format!("missing {what}"))),
                _ => Err(error("too many arguments")),
            }
        };
        let no_argument = |fault: Fault| -> Result<Fault, FaultParseError> {
            if words.len() == 1 {
                Ok(fault)
            } else {
                Err(error("takes no argument"))
            }
        };
        match words.first().copied() {
            Some("notready") => no_argument(Fault::NotReady),
            Some("unreachable") => no_argument(Fault::Unreachable),
            Some("clear") => no_argument(Fault::Clear),
            Some("latency") => {
                let millis = parse_millis(argument("DURATION")?).ok_or_else(|| {
                    error("DURATION must be a non-negative number with unit ms, s or m")
                })?;
                Ok(Fault::Latency { millis })
            }
            Some("error-rate") => {
                let rate: f64 = argument("FRACTION")?
                    .parse()
                    .map_err(|_| error("FRACTION must be a number"))?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err(error("FRACTION must be between 0 and 1"));
                }
                Ok(Fault::ErrorRate(rate))
            }
            Some("node-notready") => Ok(Fault::NodeNotReady(argument("NODE")?.to_string())),
            Some("crash") => Ok(Fault::Crash(argument("WORKLOAD")?.to_string())),
            Some(other) => Err(error(&format!("unknown fault {other:?}"))),
            None => Err(error("no fault given")),
        }
    }
}

fn parse_millis(text: &str) -> Option<u64> {
    let (number, factor) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60_000.0)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    let millis = value * factor;
    (value.is_finite() && (0.0..=86_400_000.0).contains(&millis)).then(|| millis.round() as u64)
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::NotReady => f.write_str("notready"),
            Fault::Unreachable => f.write_str("unreachable"),
            Fault::Latency { millis } => write!(f, "latency {millis}ms"),
            Fault::ErrorRate(rate) => write!(f, "error-rate {rate}"),
            Fault::NodeNotReady(node) => write!(f, "node-notready {node}"),
            Fault::Crash(workload) => write!(f, "crash {workload}"),
            Fault::Load(load) => {
                write!(
                    f,
                    "load {}/{{{}}} cpu={}m memory={}",
                    load.namespace, load.selector, load.cpu_millis, load.memory_bytes
                )?;
                for (name, milli) in &load.metrics {
                    write!(
                        f,
                        " {name}={}",
                        apiserver_views::custom_metrics_api::quantity_text(*milli)
                    )?;
                }
                Ok(())
            }
            Fault::Clear => f.write_str("clear"),
        }
    }
}

/// The faults in force. The default is a healthy cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Faults {
    pub not_ready: bool,
    pub unreachable: bool,
    pub latency_millis: u64,
    pub error_rate: f64,
    pub not_ready_nodes: BTreeSet<String>,
    pub crashed_workloads: BTreeSet<String>,
    /// The usage pods report (see [`crate::resource_metrics`]); not a fault, but state a test sets the same way.
    pub loads: Vec<Load>,
}

impl Faults {
    pub fn is_clear(&self) -> bool {
        *self == Faults::default()
    }

    /// Adds a fault (or clears them all).
    pub fn apply(&mut self, fault: Fault) {
        match fault {
            Fault::NotReady => self.not_ready = true,
            Fault::Unreachable => self.unreachable = true,
            Fault::Latency { millis } => self.latency_millis = millis,
            Fault::ErrorRate(rate) => self.error_rate = rate,
            Fault::NodeNotReady(node) => {
                self.not_ready_nodes.insert(node);
            }
            Fault::Crash(workload) => {
                self.crashed_workloads.insert(workload);
            }
            Fault::Load(load) => {
                self.loads
                    .retain(|l| (&l.namespace, &l.selector) != (&load.namespace, &load.selector));
                self.loads.push(load);
            }
            Fault::Clear => *self = Faults::default(),
        }
    }

    /// The commands that would rebuild this state from a clear one.
    pub fn commands(&self) -> Vec<Fault> {
        let mut commands = Vec::new();
        if self.not_ready {
            commands.push(Fault::NotReady);
        }
        if self.unreachable {
            commands.push(Fault::Unreachable);
        }
        if self.latency_millis > 0 {
            commands.push(Fault::Latency {
                millis: self.latency_millis,
            });
        }
        if self.error_rate > 0.0 {
            commands.push(Fault::ErrorRate(self.error_rate));
        }
        commands.extend(
            self.not_ready_nodes
                .iter()
                .cloned()
                .map(Fault::NodeNotReady),
        );
        commands.extend(self.crashed_workloads.iter().cloned().map(Fault::Crash));
        commands.extend(self.loads.iter().cloned().map(Fault::Load));
        commands
    }

    /// Whether a workload, named by its top-level owner, is crashed (`NAME` matches in any
    /// namespace, `NAMESPACE/NAME` only there).
    pub fn is_crashed(&self, namespace: &str, name: &str) -> bool {
        self.crashed_workloads
            .iter()
            .any(|workload| match workload.split_once('/') {
                Some((ns, n)) => ns == namespace && n == name,
                None => workload == name,
            })
    }
}

/// What the API server loop does with one request under the current faults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RequestEffect {
    /// Answer normally, after `delay_millis`.
    Serve { delay_millis: u64 },
    /// Answer a health check (`/readyz`, `/healthz`) with 500, after `delay_millis`.
    FailHealthCheck { delay_millis: u64 },
    /// Answer with a 500 InternalError Status, after `delay_millis`.
    Fail { delay_millis: u64 },
    /// Never answer (hold or drop the connection).
    Hang,
}

fn is_health_check(path: &str) -> bool {
    ["/readyz", "/healthz"].iter().any(|p| {
        path == *p
            || path
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

impl Faults {
    /// The effect of the faults on a request for `path`; `roll` is a uniform random number in
    /// `[0, 1)` supplied by the caller (a request fails when `roll < error_rate`). Health checks
    /// fail only under `notready`; `error-rate` affects the API, not the health endpoints.
    pub fn request_effect(&self, path: &str, roll: f64) -> RequestEffect {
        let delay_millis = self.latency_millis;
        if self.unreachable {
            return RequestEffect::Hang;
        }
        if is_health_check(path) {
            return if self.not_ready {
                RequestEffect::FailHealthCheck { delay_millis }
            } else {
                RequestEffect::Serve { delay_millis }
            };
        }
        if roll < self.error_rate {
            return RequestEffect::Fail { delay_millis };
        }
        RequestEffect::Serve { delay_millis }
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let commands = self.commands();
        if commands.is_empty() {
            return f.write_str("none");
        }
        let texts: Vec<String> = commands.iter().map(Fault::to_string).collect();
        f.write_str(&texts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_every_cli_form() {
        let cases: Vec<(&str, Fault)> = vec![
            ("notready", Fault::NotReady),
            ("unreachable", Fault::Unreachable),
            ("latency 200ms", Fault::Latency { millis: 200 }),
            ("latency 2s", Fault::Latency { millis: 2000 }),
            ("latency 1.5s", Fault::Latency { millis: 1500 }),
            ("latency 1m", Fault::Latency { millis: 60_000 }),
            ("error-rate 0.5", Fault::ErrorRate(0.5)),
            ("error-rate 1", Fault::ErrorRate(1.0)),
            (
                "node-notready member-node-1",
                Fault::NodeNotReady("member-node-1".into()),
            ),
            ("crash web", Fault::Crash("web".into())),
            ("crash default/web", Fault::Crash("default/web".into())),
            ("clear", Fault::Clear),
        ];
        for (text, expected) in cases {
            assert_eq!(text.parse::<Fault>(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn bad_input_names_the_problem_and_the_accepted_forms() {
        let cases = [
            ("", "no fault given"),
            ("explode", "unknown fault"),
            ("latency", "missing DURATION"),
            ("latency 200", "unit ms, s or m"),
            ("latency -5ms", "non-negative"),
            ("error-rate 1.5", "between 0 and 1"),
            ("error-rate half", "must be a number"),
            ("node-notready", "missing NODE"),
            ("crash a b", "too many arguments"),
            ("clear now", "takes no argument"),
        ];
        for (text, problem) in cases {
            let message = text.parse::<Fault>().expect_err(text).to_string();
            assert!(message.contains(problem), "{text}: {message}");
            assert!(
                message.contains("node-notready NODE | crash WORKLOAD | clear"),
                "{message}"
            );
        }
    }

    #[test]
    fn clear_restores_a_healthy_state_and_serde_round_trips() {
        let mut faults = Faults::default();
        for text in [
            "notready",
            "latency 200ms",
            "error-rate 0.25",
            "node-notready n1",
            "crash web",
        ] {
            faults.apply(text.parse().expect("valid"));
        }
        assert!(faults.not_ready && faults.latency_millis == 200 && faults.error_rate == 0.25);
        assert!(faults.is_crashed("default", "web") && !faults.is_crashed("default", "api"));
        let stored = serde_json::to_string(&faults).expect("serializes");
        assert!(stored.contains("\"notReadyNodes\":[\"n1\"]"), "{stored}");
        let loaded: Faults = serde_json::from_str(&stored).expect("parses");
        assert_eq!(loaded, faults);
        assert_eq!(
            faults.to_string(),
            "notready, latency 200ms, error-rate 0.25, node-notready n1, crash web"
        );
        faults.apply(Fault::Clear);
        assert!(faults.is_clear());
        assert_eq!(faults.to_string(), "none");
        assert_eq!(
            serde_json::from_str::<Faults>("{}").expect("defaults"),
            Faults::default()
        );
    }

    #[test]
    fn request_effects() {
        let faults = |commands: &[&str]| {
            let mut faults = Faults::default();
            for command in commands {
                faults.apply(command.parse().expect("valid"));
            }
            faults
        };
        let serve = |delay_millis| RequestEffect::Serve { delay_millis };
        let cases = [
            (faults(&[]), "/api/v1/pods", 0.0, serve(0)),
            (faults(&[]), "/readyz", 0.0, serve(0)),
            (
                faults(&["notready"]),
                "/readyz",
                0.9,
                RequestEffect::FailHealthCheck { delay_millis: 0 },
            ),
            (
                faults(&["notready"]),
                "/healthz/ping",
                0.9,
                RequestEffect::FailHealthCheck { delay_millis: 0 },
            ),
            (faults(&["notready"]), "/readyzfoo", 0.9, serve(0)),
            (faults(&["notready"]), "/api/v1/pods", 0.9, serve(0)),
            (
                faults(&["unreachable"]),
                "/readyz",
                0.9,
                RequestEffect::Hang,
            ),
            (faults(&["latency 200ms"]), "/api", 0.9, serve(200)),
            (
                faults(&["error-rate 0.5"]),
                "/api",
                0.49,
                RequestEffect::Fail { delay_millis: 0 },
            ),
            (faults(&["error-rate 0.5"]), "/api", 0.5, serve(0)),
            (faults(&["error-rate 0.5"]), "/readyz", 0.1, serve(0)),
            (
                faults(&["error-rate 1", "latency 1s"]),
                "/api",
                0.99,
                RequestEffect::Fail { delay_millis: 1000 },
            ),
            (
                faults(&["crash web", "node-notready n1"]),
                "/api",
                0.0,
                serve(0),
            ),
        ];
        for (faults, path, roll, expected) in cases {
            assert_eq!(
                faults.request_effect(path, roll),
                expected,
                "{faults} {path} {roll}"
            );
        }
    }

    #[test]
    fn namespaced_crash_only_matches_its_namespace() {
        let mut faults = Faults::default();
        faults.apply(Fault::Crash("prod/web".into()));
        assert!(faults.is_crashed("prod", "web"));
        assert!(!faults.is_crashed("default", "web"));
    }

    proptest! {
        #[test]
        fn display_parses_back(millis in 0u64..100_000, rate in 0.0f64..=1.0, name in "[a-z][a-z0-9-]{0,20}") {
            for fault in [
                Fault::Latency { millis },
                Fault::ErrorRate(rate),
                Fault::NodeNotReady(name.clone()),
                Fault::Crash(name.clone()),
            ] {
                prop_assert_eq!(fault.to_string().parse::<Fault>(), Ok(fault));
            }
        }

        #[test]
        fn replaying_commands_rebuilds_the_state(
            nodes in proptest::collection::btree_set("[a-z]{1,5}", 0..3),
            crashed in proptest::collection::btree_set("[a-z]{1,5}", 0..3),
            not_ready: bool,
            latency in 0u64..1000,
        ) {
            let faults = Faults { not_ready, latency_millis: latency, not_ready_nodes: nodes, crashed_workloads: crashed, ..Faults::default() };
            let mut rebuilt = Faults::default();
            for command in faults.commands() {
                rebuilt.apply(command);
            }
            prop_assert_eq!(rebuilt, faults);
        }
    }
}
