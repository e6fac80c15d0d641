//! The monitoring assets of the repository's `monitoring/` folder (Prometheus rules, Grafana dashboards), built
//! into karmadactl, and the local Prometheus of `karmadactl local-up --monitoring` ([`prometheus`]).

pub mod prometheus;
#[cfg(test)]
mod tests;

/// The alerting rules (`monitoring/prometheus/karmada.rules.yaml`).
pub const RULES: &str = include_str!("../../../../monitoring/prometheus/karmada.rules.yaml");

/// The PrometheusRule manifest of the same groups.
pub const PROMETHEUS_RULE: &str =
    include_str!("../../../../monitoring/prometheus/karmada-prometheusrule.yaml");

/// The Grafana dashboards (`monitoring/grafana/`), by file name.
pub const DASHBOARDS: [(&str, &str); 7] = [
    (
        "karmada-federation-overview.json",
        include_str!("../../../../monitoring/grafana/karmada-federation-overview.json"),
    ),
    (
        "karmada-distribution.json",
        include_str!("../../../../monitoring/grafana/karmada-distribution.json"),
    ),
    (
        "karmada-scheduling.json",
        include_str!("../../../../monitoring/grafana/karmada-scheduling.json"),
    ),
    (
        "karmada-propagation.json",
        include_str!("../../../../monitoring/grafana/karmada-propagation.json"),
    ),
    (
        "karmada-failover.json",
        include_str!("../../../../monitoring/grafana/karmada-failover.json"),
    ),
    (
        "karmada-apiserver.json",
        include_str!("../../../../monitoring/grafana/karmada-apiserver.json"),
    ),
    (
        "karmada-components.json",
        include_str!("../../../../monitoring/grafana/karmada-components.json"),
    ),
];
