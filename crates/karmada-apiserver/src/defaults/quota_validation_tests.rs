//! Table-driven tests of the ResourceQuota, LimitRange and PersistentVolume rules, run on
//! defaulted objects through `validate_builtin` as the server does.

use serde_json::{Value, json};

use super::*;
use crate::defaults::validation::tests::{assert_valid, problems};

fn limits(items: Value) -> Value {
    json!({"spec": {"limits": items}})
}

#[test]
fn resource_names_follow_upstream_helpers() {
    assert!(quota_resource_name_problems("requests.cpu").is_empty());
    assert!(quota_resource_name_problems("count/deployments.apps").is_empty());
    assert!(quota_resource_name_problems("requests.hugepages-2Mi").is_empty());
    assert_eq!(
        quota_resource_name_problems("storage"),
        vec!["must be a standard resource for quota"]
    );
    assert!(container_resource_name_problems("example.com/gpu").is_empty());
    assert_eq!(
        container_resource_name_problems("storage"),
        vec!["must be a standard resource for containers"]
    );
    assert!(is_extended("count/pods"));
    assert!(!is_extended("requests.example.com/gpu"));
    assert!(!overcommit_allowed("hugepages-2Mi"));
    assert!(!overcommit_allowed("example.com/gpu"));
    assert!(overcommit_allowed("cpu"));
}

#[test]
fn valid_objects_have_no_problems() {
    let cases = [
        (
            "ResourceQuota",
            json!({"spec": {"hard": {"pods": "10", "requests.cpu": "4", "requests.memory": "8Gi",
                   "count/deployments.apps": "5", "requests.nvidia.com/gpu": "2"}}}),
        ),
        (
            "ResourceQuota",
            json!({"spec": {"hard": {"pods": "5", "cpu": "2"}, "scopes": ["NotBestEffort", "Terminating"]}}),
        ),
        (
            "ResourceQuota",
            json!({"spec": {"hard": {"pods": "5"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
                {"scopeName": "BestEffort", "operator": "Exists"}]}}}),
        ),
        (
            "LimitRange",
            limits(json!([
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m"},
                 "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "200m"}, "maxLimitRequestRatio": {"cpu": "4"}},
                {"type": "Pod", "max": {"cpu": "4"}},
                {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}])),
        ),
        (
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
        ),
        (
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOncePod"],
                   "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}, "persistentVolumeReclaimPolicy": "Delete",
                   "volumeMode": "Block", "storageClassName": "fast"}}),
        ),
        (
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadOnlyMany", "ReadWriteMany"],
                   "local": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}}),
        ),
    ];
    assert_valid(cases);
}

#[test]
fn invalid_objects_report_kubernetes_messages() {
    let scopes = "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Someday\"]";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "ResourceQuota",
            json!({"spec": {"hard": {"gpus": "1", "storage": "1Gi", "pods": "1.5", "cpu": "-1", "memory": "lots"}}}),
            vec![
                "spec.hard[gpus]: Invalid value: \"gpus\": must be a standard resource type or fully qualified".into(),
                "spec.hard[gpus]: Invalid value: \"gpus\": must be a standard resource for quota".into(),
                "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota".into(),
                "spec.hard[pods]: Invalid value: \"1500m\": must be an integer".into(),
                "spec.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0".into(),
                "spec.hard[memory]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into(),
            ],
        ),
        (
            "ResourceQuota",
            json!({"spec": {"hard": {"cpu": "1", "pods": "2"}, "scopes": ["BestEffort", "NotBestEffort", "Someday"]}}),
            vec![
                format!("{scopes}: unsupported scope applied to resource"),
                format!("{scopes}: unsupported scope"),
                format!("{scopes}: conflicting scopes"),
            ],
        ),
        (
            "ResourceQuota",
            json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
                {"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]},
                {"scopeName": "PriorityClass", "operator": "In"},
                {"scopeName": "Forever", "operator": "Gt"}]}}}),
            vec![
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity".into(),
                "spec.scopeSelector.matchExpressions.values: Invalid value: [\"a\"]: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector".into(),
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector".into(),
                "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Forever\": unsupported scope".into(),
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Gt\": not a valid selector operator".into(),
            ],
        ),
        (
            // Defaulting copies max into default and defaultRequest, so all three orderings trip.
            "LimitRange",
            limits(json!([{"type": "Container", "max": {"cpu": "100m"}, "min": {"cpu": "200m"}}])),
            vec![
                "spec.limits[0].min[cpu]: Invalid value: \"200m\": min value 200m is greater than max value 100m".into(),
                "spec.limits[0].defaultRequest[cpu]: Invalid value: \"100m\": min value 200m is greater than default request value 100m".into(),
                "spec.limits[0].default[cpu]: Invalid value: \"200m\": min value 200m is greater than default value 100m".into(),
            ],
        ),
        (
            "LimitRange",
            limits(json!([{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "2"},
                           "defaultRequest": {"cpu": "3"}, "maxLimitRequestRatio": {"cpu": "500m"}}])),
            vec![
                "spec.limits[0].defaultRequest[cpu]: Invalid value: \"3\": default request value 3 is greater than max value 1".into(),
                "spec.limits[0].defaultRequest[cpu]: Invalid value: \"3\": default request value 3 is greater than default limit value 2".into(),
                "spec.limits[0].default[cpu]: Invalid value: \"1\": default value 2 is greater than max value 1".into(),
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"500m\": ratio 500m is less than 1".into(),
            ],
        ),
        (
            "LimitRange",
            limits(json!([{"type": "Container", "min": {"memory": "100Mi"}, "max": {"memory": "200Mi"},
                           "maxLimitRequestRatio": {"memory": "3"}}])),
            vec![
                "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: \"3\": ratio 3 is greater than max/min = 2.000000".into(),
            ],
        ),
        (
            "LimitRange",
            limits(json!([
                {"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}},
                {"type": "Pod", "max": {"storage": "1Gi"}},
                {"type": "Node"},
                {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}])),
            vec![
                "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'".into(),
                "spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'".into(),
                "spec.limits[1].type: Duplicate value: \"Pod\"".into(),
                "spec.limits[1].max[storage]: Invalid value: \"storage\": must be a standard resource for containers".into(),
                "spec.limits[2].type: Invalid value: \"Node\": must be a standard limit type or fully qualified".into(),
                "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but neither was provided".into(),
            ],
        ),
        (
            "LimitRange",
            limits(json!([{"type": "Container", "default": {"example.com/gpu": "2"},
                           "defaultRequest": {"example.com/gpu": "1"}}])),
            vec![
                "spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: \"1\": default value 2 must equal to defaultRequest value 1 in example.com/gpu".into(),
            ],
        ),
        (
            "PersistentVolume",
            json!({"spec": {}}),
            vec![
                "spec.accessModes: Required value".into(),
                "spec.capacity: Required value".into(),
                "spec.capacity: Unsupported value: {}: supported values: \"storage\"".into(),
                "spec: Required value: must specify a volume type".into(),
            ],
        ),
        (
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "-1Gi", "cpu": "1"},
                   "accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "WriteSometimes"],
                   "nfs": {"server": "s", "path": "/"}, "cephfs": {"monitors": ["m"]},
                   "persistentVolumeReclaimPolicy": "Destroy", "volumeMode": "Raw", "storageClassName": "Fast_Class"}}),
            vec![
                "spec.accessModes: Unsupported value: \"WriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"".into(),
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes".into(),
                "spec.capacity: Unsupported value: {\"storage\":\"-1Gi\",\"cpu\":\"1\"}: supported values: \"storage\"".into(),
                "spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity".into(),
                "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero".into(),
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Destroy\": supported values: \"Delete\", \"Recycle\", \"Retain\"".into(),
                "spec.cephFS: Forbidden: may not specify more than 1 volume type".into(),
                "spec.storageClassName: Invalid value: \"Fast_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"".into(),
            ],
        ),
        (
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "0"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/"},
                   "local": {"path": "/mnt"}, "persistentVolumeReclaimPolicy": "Recycle"}}),
            vec![
                "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero".into(),
                "spec.local: Forbidden: may not specify more than 1 volume type".into(),
                "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'".into(),
            ],
        ),
        (
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"}}}),
            vec!["spec.nodeAffinity: Required value: Local volume requires node affinity".into()],
        ),
    ];
    for (kind, obj, expected) in cases {
        assert_eq!(problems(kind, obj.clone(), None), expected, "{kind}: {obj}");
    }
}

#[test]
fn update_rules() {
    let quota = |scopes: Value| json!({"spec": {"hard": {"pods": "1"}, "scopes": scopes}});
    let volume = |source: Value| {
        let mut spec = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
        if let (Some(spec), Value::Object(source)) = (spec.as_object_mut(), source) {
            spec.extend(source);
        }
        json!({"spec": spec})
    };
    let csi = json!({"csi": {"driver": "d.example.com", "volumeHandle": "h"}});
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "ResourceQuota",
            quota(json!(["Terminating"])),
            quota(json!(["Terminating"])),
            vec![],
        ),
        (
            "ResourceQuota",
            quota(json!(["Terminating"])),
            quota(json!(["NotTerminating"])),
            vec!["spec.scopes: Invalid value: [\"NotTerminating\"]: field is immutable"],
        ),
        (
            "PersistentVolume",
            volume(json!({"hostPath": {"path": "/data"}})),
            volume(json!({"hostPath": {"path": "/other"}, "volumeMode": "Block"})),
            vec![
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
                "volumeMode: Invalid value: \"Block\": field is immutable",
            ],
        ),
        (
            // A CSI volume may gain an expansion secret after creation.
            "PersistentVolume",
            volume(csi.clone()),
            volume(
                json!({"csi": {"driver": "d.example.com", "volumeHandle": "h",
                                  "controllerExpandSecretRef": {"name": "s", "namespace": "n"}}}),
            ),
            vec![],
        ),
        (
            "PersistentVolume",
            volume(csi),
            volume(json!({"csi": {"driver": "d.example.com", "volumeHandle": "other"}})),
            vec![
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
            ],
        ),
    ];
    for (kind, old, new, expected) in cases {
        assert_eq!(
            problems(kind, new.clone(), Some(old)),
            expected,
            "{kind}: {new}"
        );
    }
}
