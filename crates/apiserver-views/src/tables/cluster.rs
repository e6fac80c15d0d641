//! The printer for Karmada's `cluster.karmada.io` Cluster (served by the aggregated API, not a CRD).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::since;
use super::cells::{self, NONE, list, name, text, text_or_none};
use super::{BuiltinPrinter, Column, age_column, column, name_column, wide};

pub const PRINTER: BuiltinPrinter = BuiltinPrinter {
    columns: COLUMNS,
    cells,
};

const COLUMNS: &[Column] = &[
    name_column(),
    column("Version", "Kubernetes version of the member cluster."),
    column("Mode", "Push or Pull synchronisation."),
    column("Ready", "Status of the Ready condition."),
    age_column(),
    wide("Zones", "Zones of the member cluster."),
    wide("Region", "Region of the member cluster."),
    wide("Provider", "Cloud provider of the member cluster."),
    wide("API-Endpoint", "API server address of the member cluster."),
    wide("Proxy-URL", "Proxy used to reach the member cluster."),
];

fn cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let ready =
        cells::condition_status(object, &["status", "conditions"], "Ready").unwrap_or("Unknown");
    let zones: Vec<&str> = list(object, &["spec", "zones"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let zones = if zones.is_empty() {
        NONE.to_string()
    } else {
        zones.join(",")
    };
    vec![
        json!(name(object)),
        json!(text(object, &["status", "kubernetesVersion"])),
        json!(text(object, &["spec", "syncMode"])),
        json!(ready),
        json!(since(&object["metadata"]["creationTimestamp"], now)),
        json!(zones),
        json!(text_or_none(object, &["spec", "region"])),
        json!(text_or_none(object, &["spec", "provider"])),
        json!(text(object, &["spec", "apiEndpoint"])),
        json!(text_or_none(object, &["spec", "proxyURL"])),
    ]
}
