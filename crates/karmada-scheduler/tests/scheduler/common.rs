//! Builders for Cluster, workload, policy and binding documents, and a `run` helper over `plan`.

use karmada_scheduler::{Plan, PlanInput, plan};
use serde_json::{Value, json};

pub const UID_EVEN_HASH: &str = "6f3a1c1e-0000-4000-8000-000000000001";
pub const UID_ODD_HASH: &str = "6f3a1c1e-0000-4000-8000-000000000002";

/// A Cluster document under construction.
#[derive(Clone)]
pub struct ClusterDoc(pub Value);

pub fn cluster(name: &str) -> ClusterDoc {
    ClusterDoc(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Push"},
        "status": {
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [
                    {"name": "deployments", "kind": "Deployment"},
                    {"name": "statefulsets", "kind": "StatefulSet"}]},
                {"groupVersion": "v1", "resources": [{"name": "services", "kind": "Service"}]}
            ],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "", "lastTransitionTime": "2026-11-29T00:00:00Z"}]
        }
    }))
}

impl ClusterDoc {
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = json!(value);
        self
    }
    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["annotations"][key] = json!(value);
        self
    }
    pub fn region(mut self, region: &str) -> Self {
        self.0["spec"]["region"] = json!(region);
        self
    }
    pub fn provider(mut self, provider: &str) -> Self {
        self.0["spec"]["provider"] = json!(provider);
        self
    }
    pub fn zones(mut self, zones: &[&str]) -> Self {
        self.0["spec"]["zones"] = json!(zones);
        self
    }
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let taint = json!({"key": key, "value": value, "effect": effect});
        match self.0["spec"]["taints"].as_array_mut() {
            Some(list) => list.push(taint),
            None => self.0["spec"]["taints"] = json!([taint]),
        }
        self
    }
    /// Free capacity: `cpu` and `memory` allocatable (nothing allocated) and `pods` pods.
    pub fn capacity(mut self, cpu: &str, memory: &str, pods: i64) -> Self {
        self.0["status"]["resourceSummary"] =
            json!({"allocatable": {"cpu": cpu, "memory": memory, "pods": pods.to_string()}});
        self
    }
    pub fn summary(mut self, summary: Value) -> Self {
        self.0["status"]["resourceSummary"] = summary;
        self
    }
    pub fn without_api_enablements(mut self) -> Self {
        self.0["status"]["apiEnablements"] = json!([]);
        self
    }
    pub fn deleting(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!("2026-11-29T00:00:00Z");
        self
    }
    pub fn set(mut self, pointer_parent: &str, key: &str, value: Value) -> Self {
        if let Some(target) = self.0.pointer_mut(pointer_parent) {
            target[key] = value;
        }
        self
    }
}

pub fn deployment(name: &str, replicas: i64, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                {"name": "main", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ]}}
        }
    })
}

pub fn with_uid(mut workload: Value, uid: &str) -> Value {
    workload["metadata"]["uid"] = json!(uid);
    workload
}

pub fn policy(placement: Value) -> Value {
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "test-policy", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}], "placement": placement}
    })
}

pub fn binding(clusters: &[(&str, i64)]) -> Value {
    let clusters: Vec<Value> = clusters
        .iter()
        .map(|(name, replicas)| json!({"name": name, "replicas": replicas}))
        .collect();
    json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "app-deployment", "namespace": "default", "generation": 3},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"}, "clusters": clusters},
        "status": {"lastScheduledTime": "2026-11-29T10:00:00Z"}
    })
}

pub fn docs(clusters: &[ClusterDoc]) -> Vec<Value> {
    clusters.iter().map(|c| c.0.clone()).collect()
}

pub fn run_full(
    workload: &Value,
    policy: &Value,
    clusters: &[ClusterDoc],
    binding: Option<&Value>,
    profiles: &[Value],
) -> Plan {
    let clusters = docs(clusters);
    plan(&PlanInput {
        workload,
        policy,
        clusters: &clusters,
        binding,
        profiles,
        now: Some("2026-11-29T12:00:00Z"),
        plugins: None,
    })
    .unwrap_or_else(|error| panic!("plan failed: {error}"))
}

pub fn run(
    workload: &Value,
    policy: &Value,
    clusters: &[ClusterDoc],
    binding: Option<&Value>,
) -> Plan {
    run_full(workload, policy, clusters, binding, &[])
}

pub fn try_run(
    workload: &Value,
    policy: &Value,
    clusters: &[ClusterDoc],
    profiles: &[Value],
) -> Result<Plan, String> {
    let clusters = docs(clusters);
    plan(&PlanInput {
        workload,
        policy,
        clusters: &clusters,
        binding: None,
        profiles,
        now: None,
        plugins: None,
    })
    .map_err(|e| e.to_string())
}

/// The assignment as (cluster, replicas), sorted by name.
pub fn assignment(plan: &Plan) -> Vec<(String, i64)> {
    plan.binding["spec"]["clusters"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn expect(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(n, r)| ((*n).to_string(), *r)).collect()
}

/// Every YAML document in a fixture file, as JSON.
pub fn load(relative: &str) -> Vec<Value> {
    test_fixtures::documents(relative)
}

pub fn find<'a>(documents: &'a [Value], kind: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} among the documents"))
}
