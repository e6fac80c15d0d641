//! Table-driven tests of the pure RBAC evaluator.

use apiserver_auth::rbac::{PolicyRule, authorize, rule_allows};
use apiserver_auth::{Decision, RequestAttributes, forbidden_message};
use serde_json::json;

use crate::support::*;

fn rule(value: serde_json::Value) -> PolicyRule {
    serde_json::from_value(value).unwrap()
}

#[test]
fn single_rule_matching() {
    let cases: Vec<(serde_json::Value, RequestAttributes, bool)> = vec![
        // verbs
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}),
            res("get", "", "pods", "ns", "p"),
            true,
        ),
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}),
            res("list", "", "pods", "ns", ""),
            false,
        ),
        (
            json!({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}),
            res("deletecollection", "", "pods", "ns", ""),
            true,
        ),
        // groups
        (
            json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]}),
            res("get", "", "deployments", "ns", "d"),
            false,
        ),
        (
            json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["deployments"]}),
            res("get", "apps", "deployments", "ns", "d"),
            true,
        ),
        // resources and subresources
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}),
            res("get", "", "pods/log", "ns", "p"),
            false,
        ),
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}),
            res("get", "", "pods/log", "ns", "p"),
            true,
        ),
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}),
            res("get", "", "pods", "ns", "p"),
            false,
        ),
        (
            json!({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]}),
            res("update", "apps", "deployments/scale", "ns", "d"),
            true,
        ),
        (
            json!({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]}),
            res("update", "apps", "deployments", "ns", "d"),
            false,
        ),
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}),
            res("get", "", "pods/status", "ns", "p"),
            true,
        ),
        // resourceNames
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
            res("get", "", "configmaps", "ns", "a"),
            true,
        ),
        (
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
            res("get", "", "configmaps", "ns", "b"),
            false,
        ),
        (
            json!({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
            res("list", "", "configmaps", "ns", ""),
            false,
        ),
        // non-resource URLs
        (
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}),
            non_res("get", "/healthz"),
            true,
        ),
        (
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}),
            non_res("get", "/healthz/etcd"),
            false,
        ),
        (
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz*"]}),
            non_res("get", "/healthz/etcd"),
            true,
        ),
        (
            json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}),
            non_res("get", "/apis/apps/v1"),
            true,
        ),
        (
            json!({"verbs": ["get"], "nonResourceURLs": ["*"]}),
            non_res("get", "/metrics"),
            true,
        ),
        (
            json!({"verbs": ["get"], "nonResourceURLs": ["/metrics"]}),
            non_res("post", "/metrics"),
            false,
        ),
        // a resource rule never matches a non-resource request and vice versa
        (
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
            non_res("get", "/metrics"),
            false,
        ),
        (
            json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
            res("get", "", "pods", "ns", "p"),
            false,
        ),
    ];
    for (r, attrs, want) in cases {
        assert_eq!(
            rule_allows(&rule(r.clone()), &attrs),
            want,
            "rule {r} attrs {attrs:?}"
        );
    }
}

#[test]
fn read_only_user_reads_but_gets_the_exact_forbidden_message_on_writes() {
    let view = cluster_role(
        "viewer",
        json!([{"verbs": ["get", "list", "watch"], "apiGroups": ["apps"], "resources": ["deployments"]}]),
    );
    let binding = cluster_role_binding("alice-views", "viewer", &[("User", "alice", "")]);
    let alice = user("alice", &["system:authenticated"]);
    let decide = |attrs: &RequestAttributes| {
        authorize(
            &alice,
            attrs,
            &[],
            std::slice::from_ref(&view),
            &[],
            std::slice::from_ref(&binding),
        )
    };

    assert_eq!(
        decide(&res("get", "apps", "deployments", "default", "x")),
        Decision::Allow
    );
    assert_eq!(
        decide(&res("list", "apps", "deployments", "", "")),
        Decision::Allow
    );
    let create = res("create", "apps", "deployments", "default", "x");
    assert!(matches!(decide(&create), Decision::Deny(_)));
    assert_eq!(
        forbidden_message(&alice, &create),
        r#"deployments.apps "x" is forbidden: User "alice" cannot create resource "deployments" in API group "apps" in the namespace "default""#
    );
}

#[test]
fn role_binding_to_cluster_role_grants_only_in_its_namespace() {
    let edit = cluster_role(
        "edit",
        json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}]),
    );
    let binding = role_binding(
        "team-a",
        "bob-edits",
        "ClusterRole",
        "edit",
        &[("User", "bob", "")],
    );
    let bob = user("bob", &[]);
    let decide = |attrs| {
        authorize(
            &bob,
            &attrs,
            &[],
            std::slice::from_ref(&edit),
            std::slice::from_ref(&binding),
            &[],
        )
    };
    assert_eq!(
        decide(res("create", "", "configmaps", "team-a", "c")),
        Decision::Allow
    );
    assert!(!decide(res("create", "", "configmaps", "team-b", "c")).is_allowed());
    // all-namespace and cluster-scoped requests are not covered by a RoleBinding
    assert!(!decide(res("list", "", "configmaps", "", "")).is_allowed());
}

#[test]
fn role_binding_to_role_uses_the_role_of_its_own_namespace() {
    let reader_a = role(
        "team-a",
        "reader",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]),
    );
    let reader_b = role(
        "team-b",
        "reader",
        json!([{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["secrets"]}]),
    );
    let binding = role_binding(
        "team-a",
        "carol-reads",
        "Role",
        "reader",
        &[("User", "carol", "")],
    );
    let carol = user("carol", &[]);
    let roles = [reader_a, reader_b];
    let decide = |attrs| {
        authorize(
            &carol,
            &attrs,
            &roles,
            &[],
            std::slice::from_ref(&binding),
            &[],
        )
    };
    assert!(decide(res("get", "", "secrets", "team-a", "s")).is_allowed());
    assert!(
        !decide(res("delete", "", "secrets", "team-a", "s")).is_allowed(),
        "team-b's role must not leak"
    );
    assert!(!decide(res("get", "", "secrets", "team-b", "s")).is_allowed());
}

#[test]
fn subjects_users_groups_and_service_accounts() {
    let all_pods = cluster_role(
        "pods",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
    );
    let cases = [
        // (subjects, binding namespace ("" = cluster binding), user, allowed in ns "apps")
        (
            vec![("Group", "devs", "")],
            "",
            user("dave", &["devs"]),
            true,
        ),
        (
            vec![("Group", "devs", "")],
            "",
            user("dave", &["ops"]),
            false,
        ),
        (vec![("User", "erin", "")], "", user("erin2", &[]), false),
        (
            vec![("ServiceAccount", "builder", "ci")],
            "",
            user("system:serviceaccount:ci:builder", &[]),
            true,
        ),
        (
            vec![("ServiceAccount", "builder", "ci")],
            "",
            user("system:serviceaccount:other:builder", &[]),
            false,
        ),
        // a ServiceAccount subject without a namespace defaults to the RoleBinding's namespace
        (
            vec![("ServiceAccount", "builder", "")],
            "apps",
            user("system:serviceaccount:apps:builder", &[]),
            true,
        ),
        (
            vec![("ServiceAccount", "builder", "")],
            "apps",
            user("system:serviceaccount:ci:builder", &[]),
            false,
        ),
        // ... and matches nobody in a ClusterRoleBinding
        (
            vec![("ServiceAccount", "builder", "")],
            "",
            user("system:serviceaccount::builder", &[]),
            false,
        ),
        (
            vec![("Group", "system:serviceaccounts", "")],
            "",
            user("system:serviceaccount:x:y", &["system:serviceaccounts"]),
            true,
        ),
    ];
    for (subjects, binding_ns, who, want) in cases {
        let (rbs, crbs) = if binding_ns.is_empty() {
            (vec![], vec![cluster_role_binding("b", "pods", &subjects)])
        } else {
            (
                vec![role_binding(
                    binding_ns,
                    "b",
                    "ClusterRole",
                    "pods",
                    &subjects,
                )],
                vec![],
            )
        };
        let got = authorize(
            &who,
            &res("get", "", "pods", "apps", "p"),
            &[],
            std::slice::from_ref(&all_pods),
            &rbs,
            &crbs,
        );
        assert_eq!(
            got.is_allowed(),
            want,
            "{subjects:?} in {binding_ns:?} for {}",
            who.name
        );
    }
}

#[test]
fn masters_are_allowed_everything_and_others_nothing_by_default() {
    let admin = apiserver_auth::UserInfo::admin();
    let attrs = [
        res("delete", "", "namespaces", "", "kube-system"),
        non_res("post", "/anything"),
    ];
    for a in &attrs {
        assert_eq!(authorize(&admin, a, &[], &[], &[], &[]), Decision::Allow);
        assert!(
            !authorize(
                &user("eve", &["system:authenticated"]),
                a,
                &[],
                &[],
                &[],
                &[]
            )
            .is_allowed()
        );
    }
}

#[test]
fn a_binding_to_a_missing_role_grants_nothing() {
    let binding = cluster_role_binding("dangling", "does-not-exist", &[("User", "frank", "")]);
    let got = authorize(
        &user("frank", &[]),
        &res("get", "", "pods", "a", "p"),
        &[],
        &[],
        &[],
        &[binding],
    );
    assert!(!got.is_allowed());
}

#[test]
fn a_cluster_role_binding_cannot_reference_a_role() {
    let reader = role(
        "ns",
        "reader",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
    );
    let mut binding = cluster_role_binding("odd", "reader", &[("User", "gina", "")]);
    binding.role_ref.kind = "Role".into();
    let got = authorize(
        &user("gina", &[]),
        &res("get", "", "pods", "ns", "p"),
        &[reader],
        &[],
        &[],
        &[binding],
    );
    assert!(!got.is_allowed());
}

#[test]
fn null_lists_from_go_clients_are_accepted() {
    let role: apiserver_auth::rbac::ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": "r"}, "rules": null})).unwrap();
    assert!(role.rules.is_empty());
    let binding: apiserver_auth::rbac::ClusterRoleBinding = serde_json::from_value(
        json!({"metadata": {"name": "b"}, "subjects": null, "roleRef": {"kind": "ClusterRole", "name": "r"}}),
    )
    .unwrap();
    assert!(binding.subjects.is_empty());
}
