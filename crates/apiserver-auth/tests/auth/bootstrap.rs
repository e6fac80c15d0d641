//! The default roles behave as their names promise.

use apiserver_auth::rbac::bootstrap::{
    bootstrap_cluster_role_bindings, bootstrap_cluster_roles, bootstrap_rbac_objects,
    reconciled_cluster_role,
};
use apiserver_auth::rbac::{ClusterRole, ClusterRoleBinding, RbacPolicy, RoleBinding};
use apiserver_auth::{AUTHENTICATED_GROUP, UserInfo};

use crate::support::*;

fn defaults() -> (Vec<ClusterRole>, Vec<ClusterRoleBinding>) {
    let roles = bootstrap_cluster_roles()
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let bindings = bootstrap_cluster_role_bindings()
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    (roles, bindings)
}

fn policy_with(extra: Vec<RoleBinding>, extra_cluster: Vec<ClusterRoleBinding>) -> RbacPolicy {
    let (roles, mut bindings) = defaults();
    bindings.extend(extra_cluster);
    RbacPolicy::from_objects(&[], &roles, &extra, &bindings)
}

#[test]
fn public_info_is_open_to_everyone_and_nothing_else_is_open_to_anonymous() {
    let policy = policy_with(vec![], vec![]);
    let anonymous = UserInfo::anonymous();
    for path in ["/healthz", "/readyz", "/livez", "/version", "/version/"] {
        assert!(
            policy
                .authorize(&anonymous, &non_res("get", path))
                .is_allowed(),
            "{path}"
        );
    }
    for attrs in [
        non_res("get", "/metrics"),
        non_res("get", "/apis"),
        res("list", "", "pods", "default", ""),
    ] {
        assert!(
            !policy.authorize(&anonymous, &attrs).is_allowed(),
            "{attrs:?}"
        );
    }
    let someone = user("someone", &[AUTHENTICATED_GROUP]);
    assert!(
        policy
            .authorize(&someone, &non_res("get", "/apis/apps/v1"))
            .is_allowed(),
        "discovery"
    );
    assert!(
        !policy
            .authorize(&someone, &res("get", "", "pods", "default", "p"))
            .is_allowed()
    );
}

#[test]
fn view_edit_admin_and_cluster_admin_grant_increasing_power() {
    // (role, [view pods, create deployments, read secrets, create rolebindings, delete nodes])
    let cases = [
        ("view", [true, false, false, false, false]),
        ("edit", [true, true, true, false, false]),
        ("admin", [true, true, true, true, false]),
        ("cluster-admin", [true, true, true, true, true]),
    ];
    for (role, want) in cases {
        let binding = role_binding("team", "b", "ClusterRole", role, &[("User", "u", "")]);
        let cluster_binding = cluster_role_binding("cb", role, &[("User", "cu", "")]);
        let policy = policy_with(vec![binding], vec![]);
        let u = user("u", &[AUTHENTICATED_GROUP]);
        let attrs = [
            res("list", "", "pods", "team", ""),
            res("create", "apps", "deployments", "team", "d"),
            res("get", "", "secrets", "team", "s"),
            res(
                "create",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "team",
                "rb",
            ),
            res("delete", "", "nodes", "", "n1"),
        ];
        let got: Vec<bool> = attrs
            .iter()
            .map(|a| policy.authorize(&u, a).is_allowed())
            .collect();
        // Cluster-scoped writes need a cluster binding, so the namespaced grant never reaches nodes.
        assert_eq!(
            got,
            want.iter()
                .take(4)
                .copied()
                .chain([false])
                .collect::<Vec<_>>(),
            "{role} via RoleBinding"
        );
        let policy = policy_with(vec![], vec![cluster_binding]);
        let cu = user("cu", &[AUTHENTICATED_GROUP]);
        let got: Vec<bool> = attrs
            .iter()
            .map(|a| policy.authorize(&cu, a).is_allowed())
            .collect();
        assert_eq!(got, want.to_vec(), "{role} via ClusterRoleBinding");
    }
}

#[test]
fn objects_come_with_their_store_keys_roles_first() {
    let objects = bootstrap_rbac_objects();
    let first_binding = objects
        .iter()
        .position(|(k, _)| k.contains("/clusterrolebindings/"))
        .unwrap();
    assert!(
        objects[..first_binding]
            .iter()
            .all(|(k, v)| k.contains("/clusterroles/") && v["kind"] == "ClusterRole")
    );
    assert!(
        objects[first_binding..]
            .iter()
            .all(|(k, v)| k.contains("/clusterrolebindings/") && v["kind"] == "ClusterRoleBinding")
    );
    for (key, value) in &objects {
        let name = value["metadata"]["name"].as_str().unwrap();
        assert!(
            key.starts_with("/registry/rbac.authorization.k8s.io/"),
            "{key}"
        );
        assert!(key.ends_with(&format!("/{name}")), "{key}");
    }
    let names: Vec<&str> = objects
        .iter()
        .map(|(_, v)| v["metadata"]["name"].as_str().unwrap())
        .collect();
    for want in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:public-info-viewer",
    ] {
        assert!(names.contains(&want), "{want} missing");
    }
}

#[test]
fn bootstrap_roles_gain_new_rules_and_keep_additions_unless_autoupdate_is_off() {
    let basic_user = bootstrap_cluster_roles()
        .into_iter()
        .find(|r| r["metadata"]["name"] == "system:basic-user")
        .unwrap();
    let mut older = basic_user.clone();
    let extra =
        serde_json::json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]});
    older["rules"] = serde_json::json!([basic_user["rules"][0].clone(), extra.clone()]);
    older["metadata"]["resourceVersion"] = "7".into();

    let updated = reconciled_cluster_role(&older, &basic_user).expect("a rule to add");
    assert_eq!(
        updated["rules"],
        serde_json::json!([
            basic_user["rules"][0].clone(),
            extra,
            basic_user["rules"][1].clone()
        ]),
        "the administrator's rule stays, the new bootstrap rule is appended"
    );
    assert_eq!(
        updated["metadata"]["resourceVersion"], "7",
        "written conditionally"
    );
    assert_eq!(
        reconciled_cluster_role(&updated, &basic_user),
        None,
        "idempotent"
    );

    let mut pinned = older.clone();
    pinned["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] =
        "false".into();
    assert_eq!(reconciled_cluster_role(&pinned, &basic_user), None);
}
