//! Which clusters back an import and with how many endpoints (pure): read from the imported EndpointSlices of
//! `derived-<svc>` (each names its cluster in `endpointslice.karmada.io/provision-cluster`). The service-import
//! controller's `status.clusters`, and karmadactl's `get serviceimports -o wide` and describe, read it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::ANNOTATION_PROVISION_CLUSTER;

/// Endpoints one cluster contributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// Endpoints whose `conditions.ready` is not false (Kubernetes reads a missing one as ready).
    pub ready: usize,
    pub total: usize,
}

/// Whether an EndpointSlice endpoint is ready.
pub fn is_ready(endpoint: &Value) -> bool {
    endpoint
        .pointer("/conditions/ready")
        .and_then(Value::as_bool)
        != Some(false)
}

/// The cluster an imported slice came from.
pub fn provision_cluster(slice: &Value) -> Option<&str> {
    slice
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_PROVISION_CLUSTER))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
}

/// Per cluster, the endpoints of `slices` (the imported slices of one derived Service), sorted by cluster.
pub fn backing_clusters<'a>(
    slices: impl IntoIterator<Item = &'a Value>,
) -> BTreeMap<String, Endpoints> {
    let mut clusters: BTreeMap<String, Endpoints> = BTreeMap::new();
    for slice in slices {
        let Some(cluster) = provision_cluster(slice) else {
            continue;
        };
        let entry = clusters.entry(cluster.to_string()).or_default();
        for endpoint in slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            entry.total += 1;
            if is_ready(endpoint) {
                entry.ready += 1;
            }
        }
    }
    clusters
}

/// `cluster=ready/total,...`, as the wide column and describe print it; `<none>` when nothing backs it.
pub fn summary(clusters: &BTreeMap<String, Endpoints>) -> String {
    if clusters.is_empty() {
        return "<none>".into();
    }
    clusters
        .iter()
        .map(|(cluster, e)| format!("{cluster}={}/{}", e.ready, e.total))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn slice(cluster: &str, ready: &[bool]) -> Value {
        json!({
            "metadata": {"annotations": {"endpointslice.karmada.io/provision-cluster": cluster}},
            "endpoints": ready.iter().map(|r| json!({"addresses": ["10.0.0.1"], "conditions": {"ready": r}})).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn counts_ready_endpoints_per_cluster() {
        let slices = [
            slice("b", &[true, false]),
            slice("a", &[true, true]),
            slice("b", &[true]),
            slice("c", &[]),
            json!({"metadata": {}, "endpoints": [{}]}),
        ];
        let clusters = backing_clusters(&slices);
        assert_eq!(summary(&clusters), "a=2/2,b=2/3,c=0/0");
        assert_eq!(summary(&BTreeMap::new()), "<none>");
        // A missing ready condition counts as ready, as in Kubernetes.
        assert!(is_ready(&json!({"addresses": ["10.0.0.1"]})));
    }
}
