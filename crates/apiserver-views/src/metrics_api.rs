//! `metrics.k8s.io/v1beta1`, the resource metrics API (metrics-server's, which `kubectl top` and
//! the HPA read): PodMetrics (namespaced) and NodeMetrics. Neither is stored; an API server serves
//! them from a provider (`karmada_apiserver::provided`), read-only.

use apimachinery::{PrinterColumn, ResourceDef};

/// The group metrics-server registers.
pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";
/// The verbs of a read-only kind, as metrics-server's discovery lists them.
pub const READ_ONLY_VERBS: [&str; 2] = ["get", "list"];

/// Whether `def` is served read-only (get and list, no watch, no writes).
pub fn is_read_only(def: &ResourceDef) -> bool {
    def.group == GROUP
}

/// PodMetrics and NodeMetrics.
pub fn resource_defs() -> Vec<ResourceDef> {
    vec![
        def("PodMetrics", "pods", "pod", true),
        def("NodeMetrics", "nodes", "node", false),
    ]
}

fn def(kind: &str, plural: &str, singular: &str, namespaced: bool) -> ResourceDef {
    let column = |name: &str, json_path: &str| PrinterColumn {
        name: name.into(),
        type_: "string".into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
        json_path: json_path.into(),
    };
    ResourceDef {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: singular.into(),
        namespaced,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        scale_subresource: None,
        builtin: true,
        tracks_generation: false,
        printer: apimachinery::Printer::Columns(vec![column("Window", ".window")]),
        schema: None,
        storage_version: true,
    }
}
