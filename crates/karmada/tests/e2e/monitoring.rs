//! The monitoring of `monitoring/` against a real Prometheus: `karmadactl local-up --monitoring` (Debian's
//! prometheus scraping every component and member every second), a workload, a failover and a descheduling, then
//! the Prometheus HTTP API is asked every dashboard query and every alert expression. Each must return series,
//! and the seed's four alerts must fire once their conditions are made true:
//!
//! - dispatch P99 over 30 s: member2 is unreachable for longer than that while `web`, which tolerates it, changes;
//! - a member not Ready: the same outage;
//! - ready replicas more than 20 % off: the `crashy` workloads' pods crash in the members;
//! - more than 3 descheduler evictions an hour: the descheduler moves those unready replicas, again and again.
//!
//! The rules are the shipped file with each alert's `for` shortened to 2 s (a rule parameter: the 5 minutes a
//! member must stay down would make the test 5 minutes longer); thresholds and expressions are the shipped ones.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Run, bin, wait_within};
use crate::local_up::Local;

const DEADLINE: Duration = Duration::from_secs(120);
/// Longer than the 30 s dispatch threshold, with room for the last attempt.
const OUTAGE: Duration = Duration::from_secs(38);

/// The controller-manager's periods for a quick test: status each second, failure after 3 s, descheduling
/// every 2 s of replicas unready for 3 s; its logs as JSON at -v 2.
const CONTROLLER_MANAGER_ARGS: &[&str] = &[
    "--controller-manager-arg=--cluster-status-update-frequency=1s",
    "--controller-manager-arg=--cluster-failure-threshold=3s",
    "--controller-manager-arg=--cluster-success-threshold=1s",
    "--controller-manager-arg=--cluster-monitor-period=1s",
    "--controller-manager-arg=--enable-descheduler",
    "--controller-manager-arg=--descheduling-interval=2s",
    "--controller-manager-arg=--unschedulable-threshold=3s",
    "--controller-manager-arg=--logging-format=json",
    "--controller-manager-arg=--v=2",
];

/// `web` tolerates the outage (its Work for member2 waits for it); `mover` does not (failover moves it);
/// `crashy-*` are aggregated into one member and crash there (the descheduler moves them).
fn workloads() -> String {
    let deployment = |name: &str, replicas: u32| {
        format!(
            r#"{{"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {{"name": "{name}", "namespace": "default", "labels": {{"app": "{name}"}}}},
  "spec": {{"replicas": {replicas}, "selector": {{"matchLabels": {{"app": "{name}"}}}},
    "template": {{"metadata": {{"labels": {{"app": "{name}"}}}},
      "spec": {{"containers": [{{"name": "main", "image": "nginx:1.27",
        "resources": {{"requests": {{"cpu": "100m", "memory": "64Mi"}}}}}}]}}}}}}}}"#
        )
    };
    let policy = |name: &str, targets: &str, placement: &str| {
        format!(
            r#"{{"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
  "metadata": {{"name": "{name}", "namespace": "default"}},
  "spec": {{"resourceSelectors": [{targets}], "placement": {placement}}}}}"#
        )
    };
    let selector = |name: &str| {
        format!(r#"{{"apiVersion": "apps/v1", "kind": "Deployment", "name": "{name}"}}"#)
    };
    let divided = r#"{"clusterAffinity": {"clusterNames": ["member1", "member2"]},
      "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                                                 {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}}"#;
    let tolerating = divided.replacen(
        r#""clusterAffinity""#,
        r#""clusterTolerations": [
        {"key": "cluster.karmada.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute"}],
      "clusterAffinity""#,
        1,
    );
    let aggregated = r#"{"clusterAffinity": {"clusterNames": ["member1", "member2"]},
      "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}"#;
    let mut items = vec![
        deployment("web", 4),
        policy("web", &selector("web"), &format!("{tolerating}}}")),
        deployment("mover", 2),
        policy("mover", &selector("mover"), &format!("{divided}}}")),
        deployment("crashy-1", 2),
        deployment("crashy-2", 2),
    ];
    items.push(policy(
        "crashy",
        &format!("{}, {}", selector("crashy-1"), selector("crashy-2")),
        aggregated,
    ));
    format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [{}]}}"#,
        items.join(",\n")
    )
}

/// A URL query parameter, percent-encoded.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `path` from the Prometheus at `address`; the JSON answer.
fn prometheus_get(address: &str, path: &str) -> Result<Value, String> {
    let mut stream = std::net::TcpStream::connect(address).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    serde_json::from_str(body).map_err(|e| format!("{e}: {response}"))
}

/// The series a query at `path` (with `promql` as its query) returns.
fn series_of(address: &str, path: &str, promql: &str) -> Result<Vec<Value>, String> {
    let answer = prometheus_get(address, &format!("{path}query={}", encode(promql)))?;
    if answer["status"] != "success" {
        return Err(format!("{promql}: {answer}"));
    }
    Ok(answer["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The series an instant query returns.
fn query(address: &str, promql: &str) -> Result<Vec<Value>, String> {
    series_of(address, "/api/v1/query?", promql)
}

/// The series a range query over the last `seconds` returns, a point a second.
fn query_range(address: &str, promql: &str, seconds: u64) -> Result<Vec<Value>, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let path = format!(
        "/api/v1/query_range?start={}&end={now}&step=1&",
        now.saturating_sub(seconds)
    );
    series_of(address, &path, promql)
}

/// One query of a dashboard.
struct DashboardQuery {
    dashboard: String,
    title: String,
    expr: String,
    /// A table of the present (Grafana asks an instant query); otherwise a range over the dashboard's time.
    instant: bool,
}

/// Every PromQL query of the dashboards in `monitoring/grafana`: the panels' targets and the annotations.
fn dashboard_queries() -> Vec<DashboardQuery> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../monitoring/grafana");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("monitoring/grafana")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut queries = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("read"))
            .expect("dashboard json");
        for panel in dashboard["panels"].as_array().into_iter().flatten() {
            for target in panel["targets"].as_array().into_iter().flatten() {
                queries.push(DashboardQuery {
                    dashboard: name.clone(),
                    title: panel["title"].as_str().unwrap_or_default().to_string(),
                    expr: target["expr"].as_str().unwrap_or_default().to_string(),
                    instant: target["instant"] == true,
                });
            }
        }
        for annotation in dashboard["annotations"]["list"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(expr) = annotation["expr"].as_str() {
                queries.push(DashboardQuery {
                    dashboard: name.clone(),
                    title: annotation["name"].as_str().unwrap_or_default().to_string(),
                    expr: expr.to_string(),
                    instant: false,
                });
            }
        }
    }
    queries
}

/// The shipped rules with every alert's `for` set to `hold`.
fn rules_with_hold(hold: &str) -> (Value, Vec<(String, String)>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../monitoring/prometheus/karmada.rules.yaml");
    let mut rules: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(path).expect("rules file"))
            .expect("rules yaml");
    let mut alerts = Vec::new();
    for group in rules["groups"].as_array_mut().expect("groups") {
        for rule in group["rules"].as_array_mut().expect("rules") {
            if rule.get("for").is_some() {
                rule["for"] = Value::from(hold);
            }
            alerts.push((
                rule["alert"].as_str().unwrap_or_default().to_string(),
                rule["expr"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    (rules, alerts)
}

/// An alert's expression answering for every input series: its comparisons made `bool` (0 or 1), so the
/// expression returns series whether or not the alert's condition holds.
fn as_bool(expr: &str) -> String {
    expr.replace(" > ", " > bool ").replace(" != ", " != bool ")
}

fn fault(local: &Local, member: &str, args: &[&str]) {
    Run::from(
        Command::new(bin("karmada"))
            .args(["member-sim", "fault", "--data-dir"])
            .arg(local.data.join("members"))
            .args(["--name", member])
            .args(args)
            .output()
            .expect("member-sim fault"),
    )
    .success();
}

/// Ready replicas of the workload as its binding reports them, and the declared count.
fn binding_replicas(local: &Local, name: &str) -> Result<(i64, i64), String> {
    let out = local.kubectl(&[
        "get",
        "resourcebinding",
        &format!("{name}-deployment"),
        "-o",
        "json",
    ]);
    if !out.ok() {
        return Err(out.stderr);
    }
    let binding: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
    let ready = binding["status"]["aggregatedStatus"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["status"]["readyReplicas"].as_i64())
        .sum();
    Ok((ready, binding["spec"]["replicas"].as_i64().unwrap_or(0)))
}

/// Names of the alerts that have been firing at some point in the last `seconds`.
fn fired(address: &str, seconds: u64) -> Result<Vec<String>, String> {
    let series = query(
        address,
        &format!(r#"max_over_time(ALERTS{{alertstate="firing"}}[{seconds}s])"#),
    )?;
    let mut names: Vec<String> = series
        .iter()
        .filter_map(|s| s["metric"]["alertname"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

#[test]
fn a_real_prometheus_answers_every_dashboard_query_and_fires_the_seeds_alerts() {
    let started = Instant::now();
    let local = Local::new();
    let mut args = vec![
        "--monitoring",
        "--monitoring-port",
        "0",
        "--monitoring-scrape-interval",
        "1s",
        "--enable-failover",
    ];
    args.extend_from_slice(CONTROLLER_MANAGER_ARGS);
    let up = local.local_up_with(&args);
    let stdout = up.success();
    assert!(stdout.contains("Prometheus: http://127.0.0.1:"), "{stdout}");
    let monitoring = local.data.join("monitoring");
    let address = std::fs::read_to_string(monitoring.join("address"))
        .expect("address")
        .trim()
        .to_string();

    // Every component and member is a target, and each is scraped.
    wait_within(DEADLINE, "every target up", || {
        let targets = prometheus_get(&address, "/api/v1/targets")?;
        let active = targets["data"]["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut jobs: Vec<String> = active
            .iter()
            .filter_map(|t| t["labels"]["job"].as_str().map(str::to_string))
            .collect();
        jobs.sort();
        let down: Vec<&Value> = active.iter().filter(|t| t["health"] != "up").collect();
        let expected = [
            "karmada-agent",
            "karmada-apiserver",
            // `/metrics`, and `/metrics/placements` scraped less often.
            "karmada-controller-manager",
            "karmada-controller-manager",
            "karmada-scheduler",
            "member-sim",
            "member-sim",
            "member-sim",
        ];
        if jobs == expected && down.is_empty() {
            Ok(())
        } else {
            Err(format!("jobs {jobs:?}, not up: {down:?}"))
        }
    });

    // The rule parameter: every alert's hold shortened to 2 s, the expressions as shipped. Prometheus reloads on
    // SIGHUP.
    let (rules, alerts) = rules_with_hold("2s");
    std::fs::write(monitoring.join("karmada.rules.yaml"), rules.to_string()).expect("write rules");
    let pid = std::fs::read_to_string(local.data.join("prometheus.pid")).expect("prometheus pid");
    Run::from(
        Command::new("kill")
            .args(["-HUP", pid.trim()])
            .output()
            .expect("kill"),
    )
    .success();
    wait_within(DEADLINE, "the shortened rules loaded", || {
        let loaded = prometheus_get(&address, "/api/v1/rules")?;
        let holds: Vec<f64> = loaded["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .filter_map(|r| r["duration"].as_f64())
            .collect();
        // 0 for the alert that has no hold.
        if holds.contains(&2.0) && holds.iter().all(|d| *d == 2.0 || *d == 0.0) {
            Ok(())
        } else {
            Err(format!("{holds:?}"))
        }
    });

    // A workload and its siblings, all placed and running.
    let manifest = local.data.join("workloads.json");
    std::fs::write(&manifest, workloads()).expect("write workloads");
    local
        .kubectl(&["apply", "-f", manifest.to_str().expect("utf8")])
        .success();
    for name in ["web", "mover"] {
        wait_within(
            DEADLINE,
            &format!("{name} ready"),
            || match binding_replicas(&local, name)? {
                (ready, desired) if desired > 0 && ready == desired => Ok(()),
                other => Err(format!("{other:?}")),
            },
        );
    }

    // The crashy workloads crash wherever they run: unready replicas the descheduler keeps moving.
    for member in ["member1", "member2"] {
        for name in ["crashy-1", "crashy-2"] {
            fault(&local, member, &["crash", name]);
        }
    }

    // The failover: member2 cut off. `mover` leaves it; `web` stays and its change waits for member2.
    fault(&local, "member2", &["unreachable"]);
    let outage = Instant::now();
    wait_within(DEADLINE, "member2 not Ready", || {
        let out = local.kubectl(&[
            "get",
            "cluster",
            "member2",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
        ]);
        if out.stdout.trim() == "False" {
            Ok(())
        } else {
            Err(out.stdout)
        }
    });
    local
        .kubectl(&["set", "env", "deployment/web", "CHANGED=1"])
        .success();
    wait_within(DEADLINE, "mover evicted from member2", || {
        let series = query(&address, "sum(eviction_kind_total)")?;
        match series.first().and_then(|s| s["value"][1].as_str()) {
            Some(value) if value != "0" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    std::thread::sleep(OUTAGE.saturating_sub(outage.elapsed()));
    fault(&local, "member2", &["clear"]);

    // The seed's alerts fire.
    let seed = [
        "KarmadaBindingReplicasDeviate",
        "KarmadaClusterNotReady",
        "KarmadaFrequentDescheduling",
        "KarmadaResourceDispatchSlow",
    ];
    let window = || started.elapsed().as_secs() + 60;
    wait_within(DEADLINE, "the seed's alerts firing", || {
        let fired = fired(&address, window())?;
        let missing: Vec<&&str> = seed
            .iter()
            .filter(|a| !fired.iter().any(|f| f == **a))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("not fired yet: {missing:?}; fired: {fired:?}"))
        }
    });

    // Every alert expression answers for its inputs (its comparisons as `bool`).
    let mut failures = Vec::new();
    for (name, expr) in &alerts {
        match query(&address, &as_bool(expr)) {
            Ok(series) if !series.is_empty() => {}
            Ok(_) => failures.push(format!("alert {name}: no series for {}", as_bool(expr))),
            Err(err) => failures.push(format!("alert {name}: {err}")),
        }
    }
    // Every dashboard query returns series as Grafana asks it over the test's time: a range (Grafana's rate
    // interval is four scrapes, 4 s here), or the present for a table; annotations return the test's events.
    for DashboardQuery {
        dashboard,
        title,
        expr,
        instant,
    } in dashboard_queries()
    {
        let promql = expr.replace("$__rate_interval", "4s");
        let answer = if instant {
            query(&address, &promql)
        } else {
            query_range(&address, &promql, window())
        };
        match answer {
            Ok(series) if !series.is_empty() => {}
            Ok(_) => failures.push(format!("{dashboard} / {title}: no series for {promql}")),
            Err(err) => failures.push(format!("{dashboard} / {title}: {err}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The controller-manager logs JSON, as --logging-format json asked.
    let log = std::fs::read_to_string(local.data.join("logs/karmada-controller-manager.log"))
        .expect("log");
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty());
    for line in lines {
        let entry: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            entry["level"].is_string() && entry["timestamp"].is_string(),
            "{line}"
        );
    }

    // local-down stops Prometheus with the rest.
    let prometheus_pid: i32 = pid.trim().parse().expect("pid");
    let down = local.karmadactl(&[
        "local-down",
        "--karmada-data",
        local.data.to_str().expect("utf8"),
    ]);
    assert!(
        down.success().contains("stopped prometheus"),
        "{}",
        down.stdout
    );
    wait_within(DEADLINE, "Prometheus stopped", || {
        if Path::new(&format!("/proc/{prometheus_pid}")).exists() {
            Err("still running".to_string())
        } else {
            Ok(())
        }
    });
}
