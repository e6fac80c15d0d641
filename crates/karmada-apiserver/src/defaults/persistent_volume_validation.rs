//! kube-apiserver v1.32's PersistentVolume rules: access modes, capacity, exactly one volume
//! source, reclaim policy, volume mode, and what may not change on update. Not checked: the
//! fields inside each volume source and `nodeAffinity` terms.

use serde_json::{Map, Value};

use apimachinery::names::dns1123_subdomain_problems;
use apimachinery::{FieldError, Quantity};

use super::quota_validation::quantity;
use super::rules::IMMUTABLE;

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
/// Volume source fields in upstream's checking order, with the name its errors use.
const SOURCES: [(&str, &str); 22] = [
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

fn is_set(spec: &Map<String, Value>, key: &str) -> bool {
    spec.get(key).is_some_and(|v| !v.is_null())
}

pub fn validate_persistent_volume(
    spec: &Map<String, Value>,
    old_spec: Option<&Map<String, Value>>,
    errors: &mut Vec<FieldError>,
) {
    validate_access_modes(spec, errors);
    validate_capacity(spec, errors);
    if let Some(policy) = spec
        .get("persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty() && !RECLAIM_POLICIES.contains(p))
    {
        errors.push(FieldError::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            Value::String(policy.to_string()),
            &RECLAIM_POLICIES,
        ));
    }
    validate_sources(spec, errors);
    let root_host_path = spec
        .get("hostPath")
        .and_then(|h| h.get("path"))
        .and_then(Value::as_str)
        .is_some_and(cleans_to_root);
    if root_host_path
        && spec
            .get("persistentVolumeReclaimPolicy")
            .and_then(Value::as_str)
            == Some("Recycle")
    {
        errors.push(FieldError::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    if let Some(class) = spec
        .get("storageClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        for problem in dns1123_subdomain_problems(class) {
            errors.push(FieldError::invalid(
                "spec.storageClassName",
                Value::String(class.to_string()),
                problem,
            ));
        }
    }
    if let Some(mode) = spec.get("volumeMode").filter(|m| !m.is_null())
        && !mode.as_str().is_some_and(|m| VOLUME_MODES.contains(&m))
    {
        errors.push(FieldError::not_supported(
            "spec.volumeMode",
            mode.clone(),
            &VOLUME_MODES,
        ));
    }
    if let Some(old_spec) = old_spec {
        validate_update(spec, old_spec, errors);
    }
}

fn validate_access_modes(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let modes = spec
        .get("accessModes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if modes.is_empty() {
        errors.push(FieldError::required("spec.accessModes", ""));
    }
    let (mut once_pod, mut others) = (false, false);
    for mode in modes {
        match mode.as_str() {
            Some("ReadWriteOncePod") => once_pod = true,
            Some(known) if ACCESS_MODES.contains(&known) => others = true,
            _ => errors.push(FieldError::not_supported(
                "spec.accessModes",
                mode.clone(),
                &ACCESS_MODES,
            )),
        }
    }
    if once_pod && others {
        errors.push(FieldError::forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// Exactly one resource, `storage`, with a positive size.
fn validate_capacity(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let empty = Map::new();
    let capacity = spec
        .get("capacity")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if capacity.is_empty() {
        errors.push(FieldError::required("spec.capacity", ""));
    }
    if !capacity.contains_key("storage") || capacity.len() > 1 {
        errors.push(FieldError::not_supported(
            "spec.capacity",
            Value::Object(capacity.clone()),
            &["storage"],
        ));
    }
    for (name, value) in capacity {
        let field = format!("spec.capacity[{name}]");
        let Some(size) = quantity(value, &field, errors) else {
            continue;
        };
        if size.value() < 0 {
            errors.push(FieldError::invalid(
                field.clone(),
                Value::from(i64::try_from(size.value()).unwrap_or(i64::MIN)),
                "must be a valid resource quantity",
            ));
        }
        if size <= Quantity::zero() {
            errors.push(FieldError::invalid(
                field,
                Value::String(size.to_string()),
                "must be greater than zero",
            ));
        }
    }
}

/// One source must be set; each later one is refused (a FlexVolume is counted, never refused).
fn validate_sources(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let mut count = 0;
    for (key, name) in SOURCES {
        if !is_set(spec, key) {
            continue;
        }
        if count > 0 && key != "flexVolume" {
            errors.push(FieldError::forbidden(
                format!("spec.{name}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let has_required_affinity = spec
            .get("nodeAffinity")
            .and_then(|a| a.get("required"))
            .is_some_and(|r| !r.is_null());
        if key == "local" && !has_required_affinity {
            errors.push(FieldError::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if count == 0 {
        errors.push(FieldError::required("spec", "must specify a volume type"));
    }
}

/// Whether Go's `path.Clean` turns `path` into `/`.
fn cleans_to_root(path: &str) -> bool {
    path.starts_with('/') && path.split('/').all(|part| matches!(part, "" | "." | ".."))
}

/// The volume source and mode are fixed once created; a CSI volume may gain an expansion secret.
fn validate_update(
    spec: &Map<String, Value>,
    old_spec: &Map<String, Value>,
    errors: &mut Vec<FieldError>,
) {
    let sources = |spec: &Map<String, Value>, ignore_expand_secret: bool| -> Map<String, Value> {
        let mut sources: Map<String, Value> = SOURCES
            .iter()
            .filter_map(|(key, _)| {
                let source = spec.get(*key).filter(|v| !v.is_null())?;
                Some(((*key).to_string(), source.clone()))
            })
            .collect();
        if ignore_expand_secret
            && let Some(csi) = sources.get_mut("csi").and_then(Value::as_object_mut)
        {
            csi.remove("controllerExpandSecretRef");
        }
        sources
    };
    let old_csi_lacks_secret = old_spec.get("csi").is_some_and(|csi| {
        csi.get("controllerExpandSecretRef")
            .is_none_or(Value::is_null)
    });
    if sources(spec, old_csi_lacks_secret) != sources(old_spec, false) {
        // Upstream appends a Go struct diff to this message.
        errors.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    let mode = spec.get("volumeMode").filter(|m| !m.is_null());
    if mode != old_spec.get("volumeMode").filter(|m| !m.is_null()) {
        errors.push(FieldError::invalid(
            "volumeMode",
            mode.cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}
