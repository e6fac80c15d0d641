//! Properties of the RBAC evaluator over random policies drawn from a small vocabulary (so
//! that rules, bindings and requests actually meet).

use apiserver_auth::rbac::{
    ClusterRole, ClusterRoleBinding, ObjectName, PolicyRule, RbacPolicy, Role, RoleBinding,
    RoleRef, Subject,
};
use apiserver_auth::{RequestAttributes, UserInfo};
use proptest::prelude::*;

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(options).prop_map(str::to_owned)
}

fn some_of(options: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(pick(options), 0..3)
}

const VERBS: &[&str] = &["get", "list", "create", "delete", "*"];
const GROUPS: &[&str] = &["", "apps", "*"];
const RESOURCES: &[&str] = &["pods", "pods/log", "deployments", "*/scale", "*"];
const NAMES: &[&str] = &["a", "b"];
const URLS: &[&str] = &["/healthz", "/apis/*", "*"];
const NAMESPACES: &[&str] = &["ns1", "ns2"];
const ROLES: &[&str] = &["r1", "r2"];
const USERS: &[&str] = &["alice", "bob", "system:serviceaccount:ns1:sa"];
const USER_GROUPS: &[&str] = &["devs", "ops"];

fn rule() -> impl Strategy<Value = PolicyRule> {
    (
        some_of(VERBS),
        some_of(GROUPS),
        some_of(RESOURCES),
        some_of(NAMES),
        some_of(URLS),
    )
        .prop_map(
            |(verbs, api_groups, resources, resource_names, non_resource_urls)| PolicyRule {
                verbs,
                api_groups,
                resources,
                resource_names,
                non_resource_urls,
            },
        )
}

fn rules() -> impl Strategy<Value = Vec<PolicyRule>> {
    proptest::collection::vec(rule(), 0..3)
}

fn subject() -> impl Strategy<Value = Subject> {
    prop_oneof![
        pick(USERS).prop_map(|name| Subject {
            kind: "User".into(),
            name,
            ..Default::default()
        }),
        pick(USER_GROUPS).prop_map(|name| Subject {
            kind: "Group".into(),
            name,
            ..Default::default()
        }),
        Just(Subject {
            kind: "ServiceAccount".into(),
            name: "sa".into(),
            ..Default::default()
        }),
    ]
}

fn role_ref() -> impl Strategy<Value = RoleRef> {
    (pick(&["Role", "ClusterRole"]), pick(ROLES)).prop_map(|(kind, name)| RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind,
        name,
    })
}

fn meta(namespace: &str, name: &str) -> ObjectName {
    ObjectName {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
    }
}

#[derive(Clone, Debug)]
enum Binding {
    Namespaced(String, String, Vec<Subject>, RoleRef),
    Cluster(String, Vec<Subject>, RoleRef),
}

fn binding(index: usize) -> impl Strategy<Value = Binding> {
    let name = format!("b{index}");
    let subjects = || proptest::collection::vec(subject(), 1..3);
    prop_oneof![
        (pick(NAMESPACES), subjects(), role_ref()).prop_map({
            let name = name.clone();
            move |(ns, s, r)| Binding::Namespaced(ns, name.clone(), s, r)
        }),
        (subjects(), role_ref()).prop_map(move |(s, r)| Binding::Cluster(name.clone(), s, r)),
    ]
}

fn add_binding(policy: &mut RbacPolicy, binding: Binding) {
    match binding {
        Binding::Namespaced(ns, name, subjects, role_ref) => {
            policy.role_bindings.insert(
                (ns.clone(), name.clone()),
                RoleBinding {
                    metadata: meta(&ns, &name),
                    subjects,
                    role_ref,
                },
            );
        }
        Binding::Cluster(name, subjects, role_ref) => {
            policy.cluster_role_bindings.insert(
                name.clone(),
                ClusterRoleBinding {
                    metadata: meta("", &name),
                    subjects,
                    role_ref,
                },
            );
        }
    }
}

fn policy() -> impl Strategy<Value = RbacPolicy> {
    let roles = proptest::collection::vec((pick(NAMESPACES), pick(ROLES), rules()), 0..4);
    let cluster_roles = proptest::collection::vec((pick(ROLES), rules()), 0..3);
    let bindings = (0..4usize).map(binding).collect::<Vec<_>>();
    (roles, cluster_roles, bindings).prop_map(|(roles, cluster_roles, bindings)| {
        let mut policy = RbacPolicy::default();
        for (ns, name, rules) in roles {
            policy.roles.insert(
                (ns.clone(), name.clone()),
                Role {
                    metadata: meta(&ns, &name),
                    rules,
                },
            );
        }
        for (name, rules) in cluster_roles {
            policy.cluster_roles.insert(
                name.clone(),
                ClusterRole {
                    metadata: meta("", &name),
                    rules,
                },
            );
        }
        for b in bindings {
            add_binding(&mut policy, b);
        }
        policy
    })
}

fn user() -> impl Strategy<Value = UserInfo> {
    (pick(USERS), some_of(USER_GROUPS)).prop_map(|(name, groups)| UserInfo {
        name,
        uid: String::new(),
        groups,
    })
}

fn request() -> impl Strategy<Value = RequestAttributes> {
    let resource = (
        pick(&["get", "list", "create", "delete"]),
        pick(&["", "apps"]),
        pick(&["pods", "deployments"]),
        pick(&["", "log", "scale"]),
        pick(&["", "ns1", "ns2"]),
        pick(&["", "a", "b"]),
    )
        .prop_map(
            |(verb, api_group, resource, subresource, namespace, name)| RequestAttributes {
                verb,
                api_group,
                resource,
                subresource,
                namespace,
                name,
                resource_request: true,
                path: String::new(),
            },
        );
    let non_resource = (
        pick(&["get", "post"]),
        pick(&["/healthz", "/apis/apps", "/metrics"]),
    )
        .prop_map(|(verb, path)| RequestAttributes {
            verb,
            path,
            ..Default::default()
        });
    prop_oneof![3 => resource, 1 => non_resource]
}

proptest! {
    /// RBAC has only allow rules: adding a binding never takes a permission away.
    #[test]
    fn adding_a_binding_never_revokes(policy in policy(), extra in binding(9), user in user(), attrs in request()) {
        let before = policy.authorize(&user, &attrs).is_allowed();
        let mut wider = policy.clone();
        add_binding(&mut wider, extra);
        prop_assert!(!before || wider.authorize(&user, &attrs).is_allowed());
    }

    /// Without ClusterRoleBindings, nothing is allowed outside the namespaces of the bindings.
    #[test]
    fn role_bindings_stay_in_their_namespace(mut policy in policy(), user in user(), attrs in request()) {
        policy.cluster_role_bindings.clear();
        policy.role_bindings.retain(|(ns, _), _| ns == "ns1");
        if attrs.namespace != "ns1" {
            prop_assert!(!policy.authorize(&user, &attrs).is_allowed());
        }
    }

    /// `system:masters` is allowed everything, whatever the policy.
    #[test]
    fn masters_always_allowed(policy in policy(), attrs in request()) {
        prop_assert!(policy.authorize(&UserInfo::admin(), &attrs).is_allowed());
    }
}
