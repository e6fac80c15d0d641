//! Printers for storage kinds: PersistentVolume (core) and StorageClass (`storage.k8s.io`).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::age_of;
use super::cells::{self, at, list, name, text};
use super::{BuiltinPrinter, Column, age_column, column, name_column, wide};

pub fn printer(group: &str, kind: &str) -> Option<BuiltinPrinter> {
    let printer = match (group, kind) {
        ("", "PersistentVolume") => BuiltinPrinter {
            columns: PERSISTENT_VOLUME,
            cells: persistent_volume,
        },
        ("storage.k8s.io", "StorageClass") => BuiltinPrinter {
            columns: STORAGE_CLASS,
            cells: storage_class,
        },
        _ => return None,
    };
    Some(printer)
}

/// The annotation that named a volume's class before `storageClassName` existed; it still wins.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

const PERSISTENT_VOLUME: &[Column] = &[
    name_column(),
    column("Capacity", "Storage capacity of the volume."),
    column("Access Modes", "Ways the volume can be mounted."),
    column(
        "Reclaim Policy",
        "What happens to the volume when its claim goes.",
    ),
    column("Status", "Lifecycle phase of the volume."),
    column("Claim", "The bound claim, as namespace/name."),
    column("StorageClass", "Storage class of the volume."),
    column(
        "VolumeAttributesClass",
        "Volume attributes class of the volume.",
    ),
    column("Reason", "Why the volume is in its phase."),
    age_column(),
    wide("VolumeMode", "Filesystem or Block."),
];

fn persistent_volume(object: &Value, now: Timestamp) -> Vec<Value> {
    let claim = at(object, &["spec", "claimRef"])
        .filter(|r| r.is_object())
        .map_or_else(String::new, |r| {
            format!("{}/{}", text(r, &["namespace"]), text(r, &["name"]))
        });
    let deleting = at(object, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    let phase = if deleting {
        "Terminating"
    } else {
        text(object, &["status", "phase"])
    };
    let class = at(object, &["metadata", "annotations", BETA_STORAGE_CLASS])
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(object, &["spec", "storageClassName"]));
    let unset_or = |path: &[&str]| match text(object, path) {
        "" => "<unset>".to_string(),
        value => value.to_string(),
    };
    vec![
        json!(name(object)),
        json!(cells::quantity(
            at(object, &["spec", "capacity", "storage"]),
            "0"
        )),
        json!(cells::access_modes(list(object, &["spec", "accessModes"]))),
        json!(text(object, &["spec", "persistentVolumeReclaimPolicy"])),
        json!(phase),
        json!(claim),
        json!(class),
        json!(unset_or(&["spec", "volumeAttributesClassName"])),
        json!(text(object, &["status", "reason"])),
        age_of(object, now),
        json!(unset_or(&["spec", "volumeMode"])),
    ]
}

/// Annotations that mark the cluster's default StorageClass (GA and beta spellings).
const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

const STORAGE_CLASS: &[Column] = &[
    name_column(),
    column("Provisioner", "Volume plugin that provisions the volumes."),
    column(
        "ReclaimPolicy",
        "Reclaim policy of the provisioned volumes.",
    ),
    column(
        "VolumeBindingMode",
        "When volumes are provisioned and bound.",
    ),
    column(
        "AllowVolumeExpansion",
        "Whether the volumes can be expanded.",
    ),
    age_column(),
];

fn storage_class(object: &Value, now: Timestamp) -> Vec<Value> {
    let is_default = DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
        at(object, &["metadata", "annotations", key]).and_then(Value::as_str) == Some("true")
    });
    let mut shown_name = name(object);
    if is_default {
        shown_name.push_str(" (default)");
    }
    let or_default = |field: &str, default: &str| match text(object, &[field]) {
        "" => default.to_string(),
        value => value.to_string(),
    };
    vec![
        json!(shown_name),
        json!(text(object, &["provisioner"])),
        json!(or_default("reclaimPolicy", "Delete")),
        json!(or_default("volumeBindingMode", "Immediate")),
        json!(
            at(object, &["allowVolumeExpansion"])
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age_of(object, now),
    ]
}
