//! The access of one Pull cluster's agent (`system:karmada:agent:<cluster>`), as RBAC objects (pure).
//!
//! Exactly what the agent's job needs and nothing more, so that every other request is 403:
//! - ClusterRole + ClusterRoleBinding: its own Cluster (resourceNames) and `clusters/status`;
//! - Role + RoleBinding in `karmada-cluster`: its own Lease;
//! - Role + RoleBinding in `karmada-es-<cluster>`: Works (created and deleted too: the member's exported
//!   Services are reported as Works there) and `works/status`, and Events.
//!
//! Every object is named `system:karmada:agent:<cluster>`. The cluster-scoped ones and the
//! Lease Role carry an ownerReference to the Cluster, so deleting the Cluster removes them; the
//! execution-namespace ones go with the namespace.

use serde_json::{Value, json};

use super::approve::agent_user;
use crate::names::execution_namespace;

/// Namespace of the cluster Leases (and of Push clusters' credentials).
pub const LEASE_NAMESPACE: &str = "karmada-cluster";

const RBAC: &str = "rbac.authorization.k8s.io";
const RBAC_V1: &str = "rbac.authorization.k8s.io/v1";

/// The owner a Cluster is to its agent's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterOwner {
    pub name: String,
    pub uid: String,
}

fn owner_references(owner: &ClusterOwner) -> Value {
    json!([{
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "name": owner.name,
        "uid": owner.uid,
    }])
}

fn metadata(name: &str, namespace: Option<&str>, owner: Option<&ClusterOwner>) -> Value {
    let mut meta = json!({"name": name, "labels": {"karmada.io/agent-cluster": ""}});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    if let Some(owner) = owner {
        meta["labels"]["karmada.io/agent-cluster"] = json!(owner.name);
        meta["ownerReferences"] = owner_references(owner);
    }
    meta
}

/// Rules of the agent's ClusterRole.
pub fn cluster_rules(cluster: &str) -> Value {
    json!([
        {
            "apiGroups": ["cluster.karmada.io"],
            "resources": ["clusters"],
            "resourceNames": [cluster],
            "verbs": ["get", "list", "watch", "update", "patch"],
        },
        {
            "apiGroups": ["cluster.karmada.io"],
            "resources": ["clusters/status"],
            "resourceNames": [cluster],
            "verbs": ["get", "update", "patch"],
        },
    ])
}

/// Rules of the agent's Role in `karmada-cluster`.
pub fn lease_rules(cluster: &str) -> Value {
    json!([{
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "resourceNames": [cluster],
        "verbs": ["get", "update", "patch"],
    }])
}

/// Rules of the agent's Role in its execution namespace.
pub fn work_rules() -> Value {
    json!([
        {
            "apiGroups": ["work.karmada.io"],
            "resources": ["works"],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        },
        {
            "apiGroups": ["work.karmada.io"],
            "resources": ["works/status"],
            "verbs": ["get", "update", "patch"],
        },
        {
            "apiGroups": ["", "events.k8s.io"],
            "resources": ["events"],
            "verbs": ["create", "update", "patch"],
        },
    ])
}

fn subjects(cluster: &str) -> Value {
    json!([{"apiGroup": RBAC, "kind": "User", "name": agent_user(cluster)}])
}

/// The agent's ClusterRole and ClusterRoleBinding.
pub fn cluster_scoped(owner: &ClusterOwner) -> (Value, Value) {
    let name = agent_user(&owner.name);
    let role = json!({
        "apiVersion": RBAC_V1,
        "kind": "ClusterRole",
        "metadata": metadata(&name, None, Some(owner)),
        "rules": cluster_rules(&owner.name),
    });
    let binding = json!({
        "apiVersion": RBAC_V1,
        "kind": "ClusterRoleBinding",
        "metadata": metadata(&name, None, Some(owner)),
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
        "subjects": subjects(&owner.name),
    });
    (role, binding)
}

/// The agent's Role and RoleBinding for its Lease in `karmada-cluster`.
pub fn lease_scoped(owner: &ClusterOwner) -> (Value, Value) {
    namespaced(owner, LEASE_NAMESPACE, lease_rules(&owner.name), true)
}

/// The agent's Role and RoleBinding in `karmada-es-<cluster>`.
pub fn execution_scoped(owner: &ClusterOwner) -> (Value, Value) {
    let namespace = execution_namespace(&owner.name);
    namespaced(owner, &namespace, work_rules(), false)
}

fn namespaced(owner: &ClusterOwner, namespace: &str, rules: Value, owned: bool) -> (Value, Value) {
    let name = agent_user(&owner.name);
    let owner_ref = owned.then_some(owner);
    let role = json!({
        "apiVersion": RBAC_V1,
        "kind": "Role",
        "metadata": metadata(&name, Some(namespace), owner_ref),
        "rules": rules,
    });
    let binding = json!({
        "apiVersion": RBAC_V1,
        "kind": "RoleBinding",
        "metadata": metadata(&name, Some(namespace), owner_ref),
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
        "subjects": subjects(&owner.name),
    });
    (role, binding)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use apiserver_auth::rbac::{ClusterRole, ClusterRoleBinding, RbacPolicy, Role, RoleBinding};
    use apiserver_auth::{AUTHENTICATED_GROUP, RequestAttributes, UserInfo};

    fn policy_for(clusters: &[&str]) -> RbacPolicy {
        let mut roles = Vec::new();
        let mut cluster_roles = Vec::new();
        let mut role_bindings = Vec::new();
        let mut cluster_role_bindings = Vec::new();
        for c in clusters {
            let owner = ClusterOwner {
                name: (*c).into(),
                uid: format!("uid-{c}"),
            };
            let (cr, crb) = cluster_scoped(&owner);
            cluster_roles.push(serde_json::from_value::<ClusterRole>(cr).unwrap());
            cluster_role_bindings.push(serde_json::from_value::<ClusterRoleBinding>(crb).unwrap());
            for (r, rb) in [lease_scoped(&owner), execution_scoped(&owner)] {
                roles.push(serde_json::from_value::<Role>(r).unwrap());
                role_bindings.push(serde_json::from_value::<RoleBinding>(rb).unwrap());
            }
        }
        RbacPolicy::from_objects(
            &roles,
            &cluster_roles,
            &role_bindings,
            &cluster_role_bindings,
        )
    }

    fn attrs(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            resource_request: true,
            path: String::new(),
        }
    }

    #[test]
    fn the_agent_reaches_its_own_objects_and_nothing_else() {
        let policy = policy_for(&["m1", "m2"]);
        let agent = UserInfo {
            name: agent_user("m1"),
            uid: String::new(),
            groups: vec!["system:karmada:agents".into(), AUTHENTICATED_GROUP.into()],
        };
        let c = "cluster.karmada.io";
        let w = "work.karmada.io";
        let allowed = [
            attrs("get", c, "clusters", "", "", "m1"),
            attrs("update", c, "clusters", "", "", "m1"),
            attrs("patch", c, "clusters", "", "", "m1"),
            attrs("update", c, "clusters", "status", "", "m1"),
            attrs(
                "get",
                "coordination.k8s.io",
                "leases",
                "",
                LEASE_NAMESPACE,
                "m1",
            ),
            attrs(
                "update",
                "coordination.k8s.io",
                "leases",
                "",
                LEASE_NAMESPACE,
                "m1",
            ),
            attrs("list", w, "works", "", "karmada-es-m1", ""),
            attrs("watch", w, "works", "", "karmada-es-m1", ""),
            attrs("update", w, "works", "status", "karmada-es-m1", "web"),
            attrs("create", w, "works", "", "karmada-es-m1", ""),
            attrs("delete", w, "works", "", "karmada-es-m1", "web"),
            attrs("create", "", "events", "", "karmada-es-m1", ""),
        ];
        for a in allowed {
            assert!(policy.authorize(&agent, &a).is_allowed(), "{a:?}");
        }
        let denied = [
            attrs("get", c, "clusters", "", "", "m2"),
            attrs("list", c, "clusters", "", "", ""),
            attrs("create", c, "clusters", "", "", ""),
            attrs("delete", c, "clusters", "", "", "m1"),
            attrs("update", c, "clusters", "status", "", "m2"),
            attrs(
                "get",
                "coordination.k8s.io",
                "leases",
                "",
                LEASE_NAMESPACE,
                "m2",
            ),
            attrs(
                "create",
                "coordination.k8s.io",
                "leases",
                "",
                LEASE_NAMESPACE,
                "",
            ),
            attrs("list", w, "works", "", "karmada-es-m2", ""),
            attrs("get", w, "works", "", "karmada-es-m2", "web"),
            attrs("list", w, "works", "", "", ""),
            attrs("delete", w, "works", "", "karmada-es-m2", "web"),
            attrs("create", w, "works", "", "karmada-es-m2", ""),
            attrs("get", "", "secrets", "", "karmada-es-m1", "s"),
            attrs("list", "", "secrets", "", "", ""),
            attrs("get", "", "secrets", "", LEASE_NAMESPACE, "m1"),
            attrs(
                "create",
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                "",
                "",
                "",
            ),
        ];
        for a in denied {
            assert!(!policy.authorize(&agent, &a).is_allowed(), "{a:?}");
        }
    }

    #[test]
    fn owned_objects_point_at_the_cluster() {
        let owner = ClusterOwner {
            name: "m1".into(),
            uid: "u1".into(),
        };
        let (role, binding) = cluster_scoped(&owner);
        assert_eq!(role["metadata"]["name"], "system:karmada:agent:m1");
        assert_eq!(role["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(binding["subjects"][0]["name"], "system:karmada:agent:m1");
        let (role, _) = execution_scoped(&owner);
        assert_eq!(role["metadata"]["namespace"], "karmada-es-m1");
        assert!(role["metadata"]["ownerReferences"].is_null());
        let (role, _) = lease_scoped(&owner);
        assert_eq!(role["metadata"]["namespace"], LEASE_NAMESPACE);
        assert_eq!(role["metadata"]["ownerReferences"][0]["kind"], "Cluster");
    }
}
