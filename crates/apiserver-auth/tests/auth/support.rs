//! Builders shared by the tests.

use apiserver_auth::rbac::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use apiserver_auth::{RequestAttributes, UserInfo};
use serde_json::{Value, json};

pub fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
    }
}

/// A resource request; `resource` may be `pods/log` to name a subresource.
pub fn res(
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> RequestAttributes {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    RequestAttributes {
        verb: verb.into(),
        api_group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
        resource_request: true,
        path: String::new(),
    }
}

pub fn non_res(verb: &str, path: &str) -> RequestAttributes {
    RequestAttributes {
        verb: verb.into(),
        path: path.into(),
        ..Default::default()
    }
}

pub fn role_json(namespace: &str, name: &str, rules: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": if namespace.is_empty() { "ClusterRole" } else { "Role" },
        "metadata": {"name": name, "namespace": namespace},
        "rules": rules,
    })
}

/// `subjects` are `(kind, name, namespace)`.
pub fn binding_json(
    namespace: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: &[(&str, &str, &str)],
) -> Value {
    let subjects: Vec<Value> = subjects
        .iter()
        .map(|(kind, name, ns)| {
            let mut s = json!({"kind": kind, "name": name});
            if !ns.is_empty() {
                s["namespace"] = json!(ns);
            }
            if *kind != "ServiceAccount" {
                s["apiGroup"] = json!("rbac.authorization.k8s.io");
            }
            s
        })
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": if namespace.is_empty() { "ClusterRoleBinding" } else { "RoleBinding" },
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects,
    })
}

pub fn role(namespace: &str, name: &str, rules: Value) -> Role {
    serde_json::from_value(role_json(namespace, name, rules)).unwrap()
}

pub fn cluster_role(name: &str, rules: Value) -> ClusterRole {
    serde_json::from_value(role_json("", name, rules)).unwrap()
}

pub fn role_binding(
    namespace: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: &[(&str, &str, &str)],
) -> RoleBinding {
    serde_json::from_value(binding_json(namespace, name, role_kind, role, subjects)).unwrap()
}

pub fn cluster_role_binding(
    name: &str,
    role: &str,
    subjects: &[(&str, &str, &str)],
) -> ClusterRoleBinding {
    serde_json::from_value(binding_json("", name, "ClusterRole", role, subjects)).unwrap()
}
