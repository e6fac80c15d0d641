//! The default ClusterRoles and ClusterRoleBindings a fresh cluster starts with.
//!
//! The API server creates these on an empty store (keys from [`super::storage_key`]). They
//! follow kube-apiserver's defaults in name and intent: `cluster-admin` (everything), `admin`,
//! `edit` and `view` for namespaced work, and the public/discovery roles every client needs.
//! Because `aggregationRule` is not evaluated, `admin`/`edit`/`view` carry their rules directly
//! (kube-apiserver aggregates them from `system:aggregate-to-*` roles).

use serde_json::{Value, json};

const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];

/// Namespaced resources a viewer may read, by API group. Secrets are deliberately absent:
/// reading them would reveal ServiceAccount tokens.
fn viewable() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (
            "",
            vec![
                "configmaps",
                "endpoints",
                "events",
                "limitranges",
                "namespaces",
                "namespaces/status",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "pods/log",
                "pods/status",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        (
            "apps",
            vec![
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        (
            "autoscaling",
            vec![
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        (
            "batch",
            vec!["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        ),
        ("discovery.k8s.io", vec!["endpointslices"]),
        (
            "networking.k8s.io",
            vec!["ingresses", "ingresses/status", "networkpolicies"],
        ),
        (
            "policy",
            vec!["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        (
            "policy.karmada.io",
            vec!["propagationpolicies", "overridepolicies"],
        ),
        (
            "work.karmada.io",
            vec!["resourcebindings", "resourcebindings/status"],
        ),
    ]
}

/// Namespaced resources an editor may also write (beyond what it can view).
fn editable() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (
            "",
            vec![
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "pods",
                "pods/attach",
                "pods/eviction",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        (
            "apps",
            vec![
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        ("autoscaling", vec!["horizontalpodautoscalers"]),
        ("batch", vec!["cronjobs", "jobs"]),
        ("discovery.k8s.io", vec!["endpointslices"]),
        ("networking.k8s.io", vec!["ingresses", "networkpolicies"]),
        ("policy", vec!["poddisruptionbudgets"]),
        (
            "policy.karmada.io",
            vec!["propagationpolicies", "overridepolicies"],
        ),
    ]
}

fn rules_for(groups: Vec<(&'static str, Vec<&'static str>)>, verbs: &[&str]) -> Vec<Value> {
    groups
        .into_iter()
        .map(|(group, resources)| json!({"apiGroups": [group], "resources": resources, "verbs": verbs}))
        .collect()
}

const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The stored copy of a bootstrap ClusterRole with the rules this version's `bootstrap` role adds, when it lacks
/// any and its `autoupdate` annotation is not `"false"` (kube-apiserver's reconciliation at start: rules are
/// added, never removed, so an administrator's additions stay). `None` when nothing needs writing.
pub fn reconciled_cluster_role(stored: &Value, bootstrap: &Value) -> Option<Value> {
    if stored["kind"] != "ClusterRole" || stored["metadata"]["annotations"][AUTOUPDATE] == "false" {
        return None;
    }
    let have = stored["rules"].as_array().map_or(&[][..], Vec::as_slice);
    let missing: Vec<Value> = bootstrap["rules"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|rule| !have.contains(rule))
        .cloned()
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut updated = stored.clone();
    let mut rules = have.to_vec();
    rules.extend(missing);
    updated["rules"] = Value::Array(rules);
    Some(updated)
}

fn metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name),
        "rules": rules,
    })
}

fn cluster_role_binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// What a bootstrap token may do (`karmadactl register`): submit a CertificateSigningRequest
/// and watch it be signed, and look up whether a Cluster name is taken. Nothing else: the
/// agent's own identity comes from the signed certificate.
pub const AGENT_BOOTSTRAPPER_ROLE: &str = "system:karmada:agent-bootstrapper";

fn agent_bootstrapper_rules() -> Vec<Value> {
    vec![
        json!({
            "apiGroups": ["certificates.k8s.io"],
            "resources": ["certificatesigningrequests"],
            "verbs": ["create", "get", "list", "watch"],
        }),
        json!({
            "apiGroups": ["cluster.karmada.io"],
            "resources": ["clusters"],
            "verbs": ["get"],
        }),
    ]
}

/// The default ClusterRoles.
pub fn bootstrap_cluster_roles() -> Vec<Value> {
    let view = rules_for(viewable(), &READ);
    let mut edit = view.clone();
    edit.extend(rules_for(editable(), &WRITE));
    edit.push(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": READ}));
    let mut admin = edit.clone();
    admin.push(json!({
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles", "rolebindings"],
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    }));
    admin.push(json!({
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["localsubjectaccessreviews"],
        "verbs": ["create"],
    }));
    vec![
        cluster_role(
            "cluster-admin",
            vec![
                json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                json!({"nonResourceURLs": ["*"], "verbs": ["*"]}),
            ],
        ),
        cluster_role("admin", admin),
        cluster_role("edit", edit),
        cluster_role("view", view),
        cluster_role(
            "system:public-info-viewer",
            vec![json!({
                "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"],
            })],
        ),
        cluster_role(
            "system:discovery",
            vec![json!({
                "nonResourceURLs": [
                    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                    "/openapi", "/openapi/*", "/readyz", "/version", "/version/"
                ],
                "verbs": ["get"],
            })],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![json!({
                "nonResourceURLs": [
                    "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
                    "/openid/v1/jwks", "/openid/v1/jwks/"
                ],
                "verbs": ["get"],
            })],
        ),
        cluster_role(AGENT_BOOTSTRAPPER_ROLE, agent_bootstrapper_rules()),
        cluster_role(
            "system:basic-user",
            vec![
                json!({
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                }),
                json!({
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                }),
            ],
        ),
    ]
}

/// The default ClusterRoleBindings: public info for everyone (including anonymous), discovery
/// and self-review for every authenticated user, cluster-admin for `system:masters` (which is
/// allowed everything anyway; the binding makes that visible).
pub fn bootstrap_cluster_role_bindings() -> Vec<Value> {
    vec![
        cluster_role_binding("cluster-admin", "cluster-admin", &["system:masters"]),
        cluster_role_binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        cluster_role_binding(
            "system:discovery",
            "system:discovery",
            &["system:authenticated"],
        ),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            &[crate::service_account::SERVICE_ACCOUNTS_GROUP],
        ),
        cluster_role_binding(
            "system:basic-user",
            "system:basic-user",
            &["system:authenticated"],
        ),
        cluster_role_binding(
            AGENT_BOOTSTRAPPER_ROLE,
            AGENT_BOOTSTRAPPER_ROLE,
            &[crate::bootstrap_token::BOOTSTRAPPERS_GROUP],
        ),
    ]
}

/// Every default object with its store key (ClusterRoles first, so bindings never point at a
/// role that does not exist yet).
pub fn bootstrap_rbac_objects() -> Vec<(String, Value)> {
    let roles = bootstrap_cluster_roles()
        .into_iter()
        .map(|v| (super::storage_key("clusterroles", "", name_of(&v)), v));
    let bindings = bootstrap_cluster_role_bindings().into_iter().map(|v| {
        (
            super::storage_key("clusterrolebindings", "", name_of(&v)),
            v,
        )
    });
    roles.chain(bindings).collect()
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}
