//! InterpretReplica and ReviseReplica for Deployment, ReplicaSet, StatefulSet, Job and Pod.
//!
//! Replicas: `spec.replicas` (default 1) for the apps kinds; for a Job `parallelism` (default 1) capped by
//! `completions`; a Pod is one replica. Revising a Job sets its `parallelism`.

use serde_json::{Value, json};

use super::{DEPLOYMENT, JOB, POD, REPLICA_SET, STATEFUL_SET, is, kind_of, pod_spec_pointer};
use crate::InterpretError;
use crate::interpreter::ReplicaInfo;
use crate::native::replica_requirements;
use crate::value::{int_at, object_mut};

pub(super) fn get_replicas(object: &Value) -> Result<ReplicaInfo, InterpretError> {
    let kind = kind_of(object)?;
    let replicas = if is(&kind, POD) {
        1
    } else if is(&kind, JOB) {
        let parallelism = int_at(object, "/spec/parallelism")?.unwrap_or(1);
        match int_at(object, "/spec/completions")? {
            Some(completions) if completions < parallelism => completions,
            _ => parallelism,
        }
    } else if [DEPLOYMENT, REPLICA_SET, STATEFUL_SET]
        .iter()
        .any(|k| is(&kind, *k))
    {
        int_at(object, "/spec/replicas")?.unwrap_or(1)
    } else {
        return Ok(ReplicaInfo::default());
    };
    let replicas = i32::try_from(replicas)
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            InterpretError::invalid(object, "spec.replicas", "must be between 0 and 2147483647")
        })?;
    let requirements = match pod_spec_pointer(&kind).and_then(|p| object.pointer(p)) {
        Some(pod_spec) => replica_requirements(object, pod_spec)?,
        None => None,
    };
    Ok(ReplicaInfo {
        replicas,
        requirements,
    })
}

pub(super) fn revise_replica(object: &Value, replicas: i64) -> Result<Value, InterpretError> {
    if replicas < 0 || replicas > i64::from(i32::MAX) {
        return Err(InterpretError::invalid(
            object,
            "spec.replicas",
            format!("cannot revise to {replicas}: must be between 0 and 2147483647"),
        ));
    }
    let kind = kind_of(object)?;
    let field = if is(&kind, JOB) {
        "parallelism"
    } else if [DEPLOYMENT, REPLICA_SET, STATEFUL_SET]
        .iter()
        .any(|k| is(&kind, *k))
    {
        "replicas"
    } else {
        return Ok(object.clone());
    };
    let mut revised = object.clone();
    let spec = object_mut(&mut revised, &["spec"])
        .ok_or_else(|| InterpretError::invalid(object, "spec", "must be an object"))?;
    spec.insert(field.to_string(), json!(replicas));
    Ok(revised)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workload(api_version: &str, kind: &str, spec: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn replicas_per_kind() {
        let cases = [
            (workload("apps/v1", "Deployment", json!({"replicas": 6})), 6),
            (workload("apps/v1", "Deployment", json!({})), 1),
            (workload("apps/v1", "ReplicaSet", json!({"replicas": 0})), 0),
            (
                workload("apps/v1", "StatefulSet", json!({"replicas": 3})),
                3,
            ),
            (workload("batch/v1", "Job", json!({})), 1),
            (workload("batch/v1", "Job", json!({"parallelism": 5})), 5),
            (
                workload(
                    "batch/v1",
                    "Job",
                    json!({"parallelism": 5, "completions": 2}),
                ),
                2,
            ),
            (
                workload(
                    "batch/v1",
                    "Job",
                    json!({"parallelism": 2, "completions": 8}),
                ),
                2,
            ),
            (workload("v1", "Pod", json!({"containers": []})), 1),
            (workload("v1", "ConfigMap", json!({})), 0),
        ];
        for (object, expected) in cases {
            let info = get_replicas(&object).expect("interpretable");
            assert_eq!(info.replicas, expected, "{object}");
        }
    }

    #[test]
    fn bad_replicas_are_errors() {
        for spec in [
            json!({"replicas": "six"}),
            json!({"replicas": -1}),
            json!({"replicas": 1_i64 << 40}),
        ] {
            let object = workload("apps/v1", "Deployment", spec);
            let error = get_replicas(&object).expect_err("rejected");
            assert!(
                error.to_string().contains("Deployment ns/w: spec.replicas"),
                "{error}"
            );
        }
    }

    #[test]
    fn revise_sets_the_kind_specific_field() {
        let cases = [
            ("apps/v1", "Deployment", "/spec/replicas"),
            ("apps/v1", "ReplicaSet", "/spec/replicas"),
            ("apps/v1", "StatefulSet", "/spec/replicas"),
            ("batch/v1", "Job", "/spec/parallelism"),
        ];
        for (api_version, kind, pointer) in cases {
            let object = workload(api_version, kind, json!({"replicas": 9, "parallelism": 9}));
            let revised = revise_replica(&object, 4).expect("revisable");
            assert_eq!(revised.pointer(pointer), Some(&json!(4)), "{kind}");
            assert_eq!(object.pointer(pointer), Some(&json!(9)), "input untouched");
        }
        let config_map = workload("v1", "ConfigMap", json!({}));
        assert_eq!(revise_replica(&config_map, 3).expect("no-op"), config_map);
        assert!(revise_replica(&workload("apps/v1", "Deployment", json!({})), -2).is_err());
    }

    proptest::proptest! {
        #[test]
        fn revise_then_interpret_round_trips(
            kind in proptest::sample::select(vec![("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job")]),
            before in 0i64..1000,
            after in 0i64..1000,
        ) {
            let object = workload(kind.0, kind.1, json!({"replicas": before, "parallelism": before}));
            let revised = revise_replica(&object, after).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let info = get_replicas(&revised).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(i64::from(info.replicas), after);
        }
    }
}
