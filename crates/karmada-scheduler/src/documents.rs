//! Planning from a bag of YAML documents, as `karmadactl plan -f FILE...` reads them: Cluster objects,
//! (Cluster)PropagationPolicies, current ResourceBindings and SchedulerProfiles are sorted out by kind; every other
//! document is a resource template, planned with the policy that would claim it.
//!
//! Policy matching follows Karmada's detector: a selector matches on apiVersion and kind, then namespace (a
//! PropagationPolicy only claims its own namespace, `default` when it names none; a template without a
//! namespace is taken to be in the policy's), then name if given, else its labelSelector if given, else everything. Among matching policies a
//! PropagationPolicy beats a ClusterPropagationPolicy, then higher `spec.priority`, then a name match over a
//! label match over a match-all, then the policy name in alphabetical order. Other `*.karmada.io` kinds
//! (OverridePolicy, Work, …) are ignored.

use apimachinery::LabelSelector;
use serde_json::Value;

use crate::error::InputError;
use crate::framework::{PluginSelection, Registry};
use crate::plan::{Plan, PlanInput, plan_with};

/// Policy preference: PropagationPolicy over ClusterPropagationPolicy, priority, match strength, name (asc).
type PolicyRank = (u8, i64, u8, std::cmp::Reverse<String>);

/// How specific a selector match is (higher wins).
fn match_strength(policy: &Value, workload: &Value) -> Result<Option<u8>, InputError> {
    let workload_namespace = workload
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    // A PropagationPolicy without a namespace lands in `default`, as `kubectl apply` would put it.
    let policy_namespace = Some(
        policy
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default"),
    );
    let namespaced_policy = policy.get("kind").and_then(Value::as_str) == Some("PropagationPolicy");
    if namespaced_policy && workload_namespace.is_some() && workload_namespace != policy_namespace {
        return Ok(None);
    }
    let namespace = workload_namespace.or(if namespaced_policy {
        policy_namespace
    } else {
        None
    });
    let mut best = None;
    for (index, selector) in policy
        .pointer("/spec/resourceSelectors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = |key: &str| {
            selector
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        if field("apiVersion") != workload.get("apiVersion").and_then(Value::as_str)
            || field("kind") != workload.get("kind").and_then(Value::as_str)
        {
            continue;
        }
        if let Some(wanted) = field("namespace")
            && Some(wanted) != namespace
        {
            continue;
        }
        let strength = if let Some(name) = field("name") {
            if Some(name) != workload.pointer("/metadata/name").and_then(Value::as_str) {
                continue;
            }
            3
        } else if let Some(selector_value) = selector.get("labelSelector").filter(|v| !v.is_null())
        {
            let parsed = LabelSelector::from_label_selector(selector_value).map_err(|e| {
                InputError::new(
                    format!(
                        "policy {}: spec.resourceSelectors[{index}].labelSelector",
                        policy
                            .pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    ),
                    e.to_string(),
                )
            })?;
            if !parsed.matches_object(workload) {
                continue;
            }
            2
        } else {
            1
        };
        best = best.max(Some(strength));
    }
    Ok(best)
}

fn is_karmada(document: &Value) -> bool {
    document
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split('/').next())
        .is_some_and(|group| group.ends_with("karmada.io"))
}

/// Plans every resource template among `documents` that a policy among them claims.
pub fn plan_documents(
    documents: &[Value],
    now: Option<&str>,
    registry: &Registry,
) -> Result<Vec<Plan>, InputError> {
    plan_documents_with(documents, now, registry, None)
}

/// [`plan_documents`] for a scheduler whose `--plugins` is `plugins`.
pub fn plan_documents_with(
    documents: &[Value],
    now: Option<&str>,
    registry: &Registry,
    plugins: Option<&PluginSelection>,
) -> Result<Vec<Plan>, InputError> {
    let kind = |d: &Value| {
        d.get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let of_kind = |kinds: &[&str]| -> Vec<Value> {
        documents
            .iter()
            .filter(|d| is_karmada(d) && kinds.contains(&kind(d).as_str()))
            .cloned()
            .collect()
    };
    let clusters = of_kind(&["Cluster"]);
    let policies = of_kind(&["PropagationPolicy", "ClusterPropagationPolicy"]);
    let bindings = of_kind(&["ResourceBinding", "ClusterResourceBinding"]);
    let profiles = of_kind(&["SchedulerProfile"]);
    let workloads: Vec<&Value> = documents
        .iter()
        .filter(|d| !d.is_null() && !is_karmada(d))
        .collect();
    if policies.is_empty() {
        return Err(InputError::new(
            "inputs",
            "no PropagationPolicy or ClusterPropagationPolicy among the documents; give the policy that would claim the workload",
        ));
    }
    let mut plans = Vec::new();
    for workload in workloads {
        let mut best: Option<(PolicyRank, &Value)> = None;
        for policy in &policies {
            let Some(strength) = match_strength(policy, workload)? else {
                continue;
            };
            let namespaced = u8::from(kind(policy) == "PropagationPolicy");
            let priority = policy
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let name = policy
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let key = (namespaced, priority, strength, std::cmp::Reverse(name));
            if best.as_ref().is_none_or(|(current, _)| key > *current) {
                best = Some((key, policy));
            }
        }
        let Some((_, policy)) = best else { continue };
        let mut workload = workload.clone();
        if kind(policy) == "PropagationPolicy"
            && workload.pointer("/metadata/namespace").is_none()
            && let Some(namespace) = policy.pointer("/metadata/namespace").cloned()
            && let Some(metadata) = workload.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.insert("namespace".into(), namespace);
        }
        let binding = bindings.iter().find(|b| {
            let resource = |key: &str| {
                b.pointer(&format!("/spec/resource/{key}"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            resource("kind") == kind(&workload)
                && Some(resource("name").as_str())
                    == workload.pointer("/metadata/name").and_then(Value::as_str)
                && resource("namespace")
                    == workload
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
        });
        let input = PlanInput {
            workload: &workload,
            policy,
            clusters: &clusters,
            binding,
            profiles: &profiles,
            now,
            plugins,
        };
        plans.push(plan_with(&input, registry)?);
    }
    if plans.is_empty() {
        return Err(InputError::new(
            "inputs",
            "no resource template among the documents is selected by the given policies (matching apiVersion, kind, namespace, name or labelSelector)",
        ));
    }
    Ok(plans)
}
