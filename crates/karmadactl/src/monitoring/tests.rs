//! The monitoring assets against Debian's `promtool`: the rules are valid, their unit tests pass (series that must
//! and must not fire each alert), the PrometheusRule holds the same groups, and every dashboard query is valid
//! PromQL.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::{DASHBOARDS, PROMETHEUS_RULE, RULES};

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../monitoring")
}

/// Runs `promtool` with `args` in `dir`; fails with how to install it when it is missing.
fn promtool(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|err| {
            panic!(
                "running promtool ({err}): install Debian's prometheus package (apt-get install prometheus; \
                 ./scripts/setup.sh does)"
            )
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn the_rules_file_passes_promtool_check_rules() {
    let (ok, text) = promtool(
        &monitoring_dir().join("prometheus"),
        &["check", "rules", "karmada.rules.yaml"],
    );
    assert!(ok, "{text}");
    let alerts = alert_rules(RULES).expect("rules parse");
    for seed in [
        "KarmadaResourceDispatchSlow",
        "KarmadaClusterNotReady",
        "KarmadaBindingReplicasDeviate",
        "KarmadaFrequentDescheduling",
    ] {
        assert!(
            alerts.iter().any(|(name, _, _)| name == seed),
            "{seed} missing"
        );
    }
}

#[test]
fn every_alert_has_a_summary_a_runbook_and_a_severity() {
    let rules: Value = serde_saphyr::from_str(RULES).expect("rules parse");
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = &rule["alert"];
            assert!(
                rule["annotations"]["summary"].is_string(),
                "{name}: no summary"
            );
            assert!(
                rule["annotations"]["runbook"].is_string(),
                "{name}: no runbook"
            );
            assert!(
                rule["labels"]["severity"].is_string(),
                "{name}: no severity"
            );
        }
    }
}

#[test]
fn the_alerts_unit_tests_pass_in_promtool() {
    let tests = monitoring_dir().join("prometheus/tests");
    let (ok, text) = promtool(&tests, &["test", "rules", "karmada.rules.test.yaml"]);
    assert!(ok, "{text}");
    assert!(text.contains("SUCCESS"), "{text}");
    // Each alert is tested.
    let cases: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(tests.join("karmada.rules.test.yaml")).expect("tests file"),
    )
    .expect("tests parse");
    let tested: Vec<&str> = cases["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|case| case["alert_rule_test"].as_array().into_iter().flatten())
        .filter_map(|check| check["alertname"].as_str())
        .collect();
    for (name, _, _) in alert_rules(RULES).expect("rules parse") {
        assert!(
            tested.contains(&name.as_str()),
            "{name} has no promtool test"
        );
    }
}

#[test]
fn the_prometheus_rule_manifest_holds_the_rules_files_groups() {
    let rules: Value = serde_saphyr::from_str(RULES).expect("rules parse");
    let manifest: Value = serde_saphyr::from_str(PROMETHEUS_RULE).expect("manifest parses");
    assert_eq!(manifest["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(manifest["kind"], "PrometheusRule");
    assert_eq!(
        manifest["spec"]["groups"], rules["groups"],
        "monitoring/prometheus/karmada-prometheusrule.yaml differs from karmada.rules.yaml: copy the groups over"
    );
}

#[test]
fn every_dashboard_query_is_valid_promql() {
    let mut rules = Vec::new();
    for (file, text) in DASHBOARDS {
        let dashboard: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let queries = dashboard_queries(&dashboard);
        assert!(!queries.is_empty(), "{file} has no queries");
        for (index, query) in queries.iter().enumerate() {
            rules.push(json!({
                "record": format!("dashboard:{}:{index}", file.trim_end_matches(".json").replace('-', "_")),
                "expr": without_grafana_variables(&query.expr, "1m"),
            }));
        }
    }
    // promtool checks a rules file's expressions: the queries become recording rules of one.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("queries.yaml");
    std::fs::write(
        &file,
        serde_json::to_string(&json!({"groups": [{"name": "dashboards", "rules": rules}]}))
            .expect("json"),
    )
    .expect("write");
    let (ok, text) = promtool(dir.path(), &["check", "rules", "queries.yaml"]);
    assert!(ok, "{text}");
}

#[test]
fn dashboards_are_grafana_json_with_unique_ids_and_a_datasource_variable() {
    for (file, text) in DASHBOARDS {
        let dashboard: Value = serde_json::from_str(text).expect("json");
        assert_eq!(
            dashboard["uid"],
            file.trim_end_matches(".json"),
            "{file}: uid should be the file name"
        );
        assert_eq!(
            dashboard["templating"]["list"][0]["type"], "datasource",
            "{file}"
        );
        let panels = dashboard["panels"].as_array().expect("panels");
        let mut ids: Vec<i64> = panels.iter().filter_map(|p| p["id"].as_i64()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), panels.len(), "{file}: panel ids repeat");
        for panel in panels {
            assert!(
                panel["targets"].as_array().is_some_and(|t| !t.is_empty()),
                "{file}: panel {} has no query",
                panel["title"]
            );
            assert_eq!(panel["datasource"]["uid"], "${datasource}", "{file}");
        }
    }
}

/// One PromQL query of a dashboard: a panel's target or an annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct DashboardQuery {
    pub dashboard: String,
    /// The panel's title, or the annotation's name.
    pub title: String,
    pub expr: String,
    /// An annotation's query (it returns data only while its events happen).
    pub annotation: bool,
}

/// Every query of the dashboard `json`, in order.
pub fn dashboard_queries(json: &Value) -> Vec<DashboardQuery> {
    let dashboard = json["title"].as_str().unwrap_or_default().to_string();
    let mut queries = Vec::new();
    for panel in json["panels"].as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                queries.push(DashboardQuery {
                    dashboard: dashboard.clone(),
                    title: panel["title"].as_str().unwrap_or_default().to_string(),
                    expr: expr.to_string(),
                    annotation: false,
                });
            }
        }
    }
    for annotation in json["annotations"]["list"].as_array().into_iter().flatten() {
        if let Some(expr) = annotation["expr"].as_str() {
            queries.push(DashboardQuery {
                dashboard: dashboard.clone(),
                title: annotation["name"].as_str().unwrap_or_default().to_string(),
                expr: expr.to_string(),
                annotation: true,
            });
        }
    }
    queries
}

/// `expr` as Prometheus evaluates it outside Grafana: Grafana's `$__rate_interval` becomes `rate_interval`.
pub fn without_grafana_variables(expr: &str, rate_interval: &str) -> String {
    expr.replace("$__rate_interval", rate_interval)
}

/// The rules file's alerting rules: (name, expression, `for`).
pub fn alert_rules(rules_yaml: &str) -> anyhow::Result<Vec<(String, String, Option<String>)>> {
    let rules: Value = serde_saphyr::from_str(rules_yaml)?;
    let mut alerts = Vec::new();
    for group in rules["groups"].as_array().into_iter().flatten() {
        for rule in group["rules"].as_array().into_iter().flatten() {
            if let (Some(name), Some(expr)) = (rule["alert"].as_str(), rule["expr"].as_str()) {
                alerts.push((
                    name.to_string(),
                    expr.to_string(),
                    rule["for"].as_str().map(str::to_string),
                ));
            }
        }
    }
    Ok(alerts)
}
