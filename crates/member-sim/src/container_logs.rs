//! `pods/log`: the lines a simulated container "printed", derived from its status (it started,
//! became ready, exited), with the kubelet's options (`previous`, `tailLines`, `sinceSeconds`,
//! `sinceTime`, `timestamps`, `limitBytes`) and its errors for containers with no logs yet.
//!
//! Pure: the Pod, the container name and `now` in; text or the API error's message out.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::meta;

/// The query of a log request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<i64>,
    pub since_seconds: Option<i64>,
    pub since_time: Option<Timestamp>,
    pub limit_bytes: Option<i64>,
}

/// One printed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    pub time: Timestamp,
    pub text: String,
}

/// Why there are no logs to give; kube-apiserver answers these with 400 BadRequest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("container \"{container}\" in pod \"{pod}\" is waiting to start: {reason}")]
    Waiting {
        container: String,
        pod: String,
        reason: String,
    },
    #[error("previous terminated container \"{container}\" in pod \"{pod}\" not found")]
    NoPrevious { container: String, pod: String },
}

/// The status of container `name` in `pod`, if reported.
fn status_of<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["/status/containerStatuses", "/status/initContainerStatuses"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .find(|s| meta::str_at(s, "/name") == name)
}

fn time_at(object: &Value, pointer: &str) -> Option<Timestamp> {
    meta::parse_time(meta::str_at(object, pointer))
}

/// Lines of one container instance described by a `state` (`running` or `terminated`).
fn instance_lines(
    pod: &Value,
    name: &str,
    image: &str,
    state: &Value,
    ready: bool,
) -> Vec<LogLine> {
    let mut lines = Vec::new();
    let started =
        time_at(state, "/running/startedAt").or_else(|| time_at(state, "/terminated/startedAt"));
    if let Some(time) = started {
        lines.push(LogLine {
            time,
            text: format!("member-sim: container {name} started (image {image})"),
        });
    }
    if ready
        && let Some(time) = meta::conditions(pod)
            .iter()
            .find(|c| meta::str_at(c, "/type") == "Ready" && meta::str_at(c, "/status") == "True")
            .and_then(|c| time_at(c, "/lastTransitionTime"))
    {
        lines.push(LogLine {
            time: time.max(started.unwrap_or(time)),
            text: format!("member-sim: container {name} is ready"),
        });
    }
    if let Some(terminated) = state.get("terminated") {
        let time = time_at(terminated, "/finishedAt").or(started);
        if let Some(time) = time {
            lines.push(LogLine {
                time,
                text: format!(
                    "member-sim: container {name} exiting with code {} ({})",
                    meta::i64_at(terminated, "/exitCode"),
                    meta::str_at(terminated, "/reason")
                ),
            });
        }
    }
    lines
}

/// Every line of the instance the options select, oldest first.
pub fn lines(pod: &Value, container: &str, options: &LogOptions) -> Result<Vec<LogLine>, LogError> {
    let image = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .and_then(|all| all.iter().find(|c| meta::str_at(c, "/name") == container))
        .map(|c| meta::str_at(c, "/image"))
        .unwrap_or_default();
    let status = status_of(pod, container);
    let state = status.and_then(|s| s.get("state"));
    let last = status
        .and_then(|s| s.get("lastState"))
        .filter(|l| l.get("terminated").is_some());
    let pod_name = meta::name(pod).to_string();
    if options.previous {
        return last
            .map(|state| instance_lines(pod, container, image, state, false))
            .ok_or(LogError::NoPrevious {
                container: container.to_string(),
                pod: pod_name,
            });
    }
    match state {
        Some(state) if state.get("running").is_some() || state.get("terminated").is_some() => {
            let ready = status.and_then(|s| s.get("ready")).and_then(Value::as_bool) == Some(true);
            Ok(instance_lines(pod, container, image, state, ready))
        }
        // A container waiting to restart: its most recent instance's logs, as the kubelet serves them.
        Some(_) if last.is_some() => Ok(last
            .map(|state| instance_lines(pod, container, image, state, false))
            .unwrap_or_default()),
        _ => Err(LogError::Waiting {
            container: container.to_string(),
            pod: pod_name,
            reason: state
                .and_then(|s| s.pointer("/waiting/reason"))
                .and_then(Value::as_str)
                .unwrap_or("ContainerCreating")
                .to_string(),
        }),
    }
}

/// The response text: lines after the since-filter, the tail, timestamps, then the byte limit.
pub fn render(lines: &[LogLine], options: &LogOptions, now: Timestamp) -> String {
    let since = options.since_time.or_else(|| {
        options
            .since_seconds
            .and_then(|s| now.checked_sub(SignedDuration::from_secs(s)).ok())
    });
    let kept: Vec<&LogLine> = lines
        .iter()
        .filter(|line| since.is_none_or(|since| line.time >= since))
        .collect();
    let skip = match options.tail_lines {
        Some(tail) if tail >= 0 => kept.len().saturating_sub(tail as usize),
        _ => 0,
    };
    let mut text = String::new();
    for line in &kept[skip..] {
        if options.timestamps {
            text.push_str(&line.time.strftime("%Y-%m-%dT%H:%M:%S.%9fZ").to_string());
            text.push(' ');
        }
        text.push_str(&line.text);
        text.push('\n');
    }
    if let Some(limit) = options.limit_bytes.filter(|l| *l >= 0) {
        let mut end = (limit as usize).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn running_pod() -> Value {
        json!({
            "metadata": {"name": "web-0"},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T12:00:05Z"}],
                "containerStatuses": [{
                    "name": "app", "ready": true, "restartCount": 1,
                    "state": {"running": {"startedAt": "2026-11-29T12:00:03Z"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                        "startedAt": "2026-11-29T11:59:00Z", "finishedAt": "2026-11-29T12:00:01Z"}},
                }],
            },
        })
    }

    #[test]
    fn running_and_previous_instances() {
        let pod = running_pod();
        let current = lines(&pod, "app", &LogOptions::default()).unwrap();
        let texts: Vec<&str> = current.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "member-sim: container app started (image nginx:1.27)",
                "member-sim: container app is ready"
            ]
        );
        let previous = LogOptions {
            previous: true,
            ..LogOptions::default()
        };
        let before = lines(&pod, "app", &previous).unwrap();
        assert_eq!(
            before.last().unwrap().text,
            "member-sim: container app exiting with code 1 (Error)"
        );
        assert_eq!(before.last().unwrap().time, t("2026-11-29T12:00:01Z"));
    }

    #[test]
    fn containers_without_logs_are_errors() {
        let waiting = json!({
            "metadata": {"name": "p"},
            "status": {"containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}]},
        });
        assert_eq!(
            lines(&waiting, "app", &LogOptions::default())
                .unwrap_err()
                .to_string(),
            "container \"app\" in pod \"p\" is waiting to start: ContainerCreating"
        );
        let previous = LogOptions {
            previous: true,
            ..LogOptions::default()
        };
        assert_eq!(
            lines(&waiting, "app", &previous).unwrap_err().to_string(),
            "previous terminated container \"app\" in pod \"p\" not found"
        );
    }

    #[test]
    fn options_filter_and_format() {
        let all = vec![
            LogLine {
                time: t("2026-11-29T12:00:00Z"),
                text: "one".into(),
            },
            LogLine {
                time: t("2026-11-29T12:00:10Z"),
                text: "two".into(),
            },
            LogLine {
                time: t("2026-11-29T12:00:20Z"),
                text: "three".into(),
            },
        ];
        let now = t("2026-11-29T12:00:30Z");
        let cases: &[(LogOptions, &str)] = &[
            (LogOptions::default(), "one\ntwo\nthree\n"),
            (
                LogOptions {
                    tail_lines: Some(1),
                    ..Default::default()
                },
                "three\n",
            ),
            (
                LogOptions {
                    tail_lines: Some(0),
                    ..Default::default()
                },
                "",
            ),
            (
                LogOptions {
                    tail_lines: Some(9),
                    ..Default::default()
                },
                "one\ntwo\nthree\n",
            ),
            (
                LogOptions {
                    since_seconds: Some(20),
                    ..Default::default()
                },
                "two\nthree\n",
            ),
            (
                LogOptions {
                    since_time: Some(t("2026-11-29T12:00:15Z")),
                    ..Default::default()
                },
                "three\n",
            ),
            (
                LogOptions {
                    limit_bytes: Some(6),
                    ..Default::default()
                },
                "one\ntw",
            ),
            (
                LogOptions {
                    timestamps: true,
                    tail_lines: Some(1),
                    ..Default::default()
                },
                "2026-11-29T12:00:20.000000000Z three\n",
            ),
        ];
        for (options, want) in cases {
            assert_eq!(render(&all, options, now), *want, "{options:?}");
        }
    }
}
