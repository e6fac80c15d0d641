//! The pure RBAC evaluator: no I/O, no clock; the same inputs always give the same decision.

use std::collections::BTreeMap;

use crate::authz::{Decision, RequestAttributes};
use crate::user::UserInfo;

use super::types::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

const WILDCARD: &str = "*";

/// Whether one rule allows the request.
pub fn rule_allows(rule: &PolicyRule, attrs: &RequestAttributes) -> bool {
    if !matches_any(&rule.verbs, &attrs.verb) {
        return false;
    }
    if !attrs.resource_request {
        return rule
            .non_resource_urls
            .iter()
            .any(|pattern| non_resource_url_matches(pattern, &attrs.path));
    }
    matches_any(&rule.api_groups, &attrs.api_group)
        && resource_matches(&rule.resources, attrs)
        && (rule.resource_names.is_empty()
            || (!attrs.name.is_empty() && rule.resource_names.contains(&attrs.name)))
}

fn matches_any(allowed: &[String], value: &str) -> bool {
    allowed.iter().any(|a| a == WILDCARD || a == value)
}

/// `*` matches everything; `pods` matches only the resource itself (not its subresources);
/// `pods/log` matches that subresource; `*/scale` matches the subresource of any resource.
fn resource_matches(allowed: &[String], attrs: &RequestAttributes) -> bool {
    allowed.iter().any(|pattern| {
        if pattern == WILDCARD {
            return true;
        }
        if attrs.subresource.is_empty() {
            return *pattern == attrs.resource;
        }
        match pattern.split_once('/') {
            Some((resource, subresource)) => {
                (resource == attrs.resource || resource == WILDCARD)
                    && subresource == attrs.subresource
            }
            None => false,
        }
    })
}

/// Exact match, or a prefix match for patterns ending in `*`.
fn non_resource_url_matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => pattern == path,
    }
}

/// Whether a binding subject names this user. `binding_namespace` is the default namespace of
/// ServiceAccount subjects (empty for ClusterRoleBindings).
pub fn subject_applies(subject: &Subject, user: &UserInfo, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let namespace = if subject.namespace.is_empty() {
                binding_namespace
            } else {
                &subject.namespace
            };
            !namespace.is_empty()
                && user.name == format!("system:serviceaccount:{namespace}:{}", subject.name)
        }
        _ => false,
    }
}

/// An indexed set of RBAC objects, keyed for the lookups evaluation needs.
#[derive(Clone, Debug, Default)]
pub struct RbacPolicy {
    /// (namespace, name) → Role.
    pub roles: BTreeMap<(String, String), Role>,
    pub cluster_roles: BTreeMap<String, ClusterRole>,
    /// (namespace, name) → RoleBinding; the key order lets one namespace be scanned alone.
    pub role_bindings: BTreeMap<(String, String), RoleBinding>,
    pub cluster_role_bindings: BTreeMap<String, ClusterRoleBinding>,
}

impl RbacPolicy {
    pub fn from_objects(
        roles: &[Role],
        cluster_roles: &[ClusterRole],
        role_bindings: &[RoleBinding],
        cluster_role_bindings: &[ClusterRoleBinding],
    ) -> Self {
        let key = |m: &super::ObjectName| (m.namespace.clone(), m.name.clone());
        RbacPolicy {
            roles: roles
                .iter()
                .map(|r| (key(&r.metadata), r.clone()))
                .collect(),
            cluster_roles: cluster_roles
                .iter()
                .map(|r| (r.metadata.name.clone(), r.clone()))
                .collect(),
            role_bindings: role_bindings
                .iter()
                .map(|b| (key(&b.metadata), b.clone()))
                .collect(),
            cluster_role_bindings: cluster_role_bindings
                .iter()
                .map(|b| (b.metadata.name.clone(), b.clone()))
                .collect(),
        }
    }

    /// The RBAC decision for one request.
    pub fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        if user.is_master() {
            return Decision::Allow;
        }
        for binding in self.cluster_role_bindings.values() {
            if binding.role_ref.kind != "ClusterRole"
                || !binding
                    .subjects
                    .iter()
                    .any(|s| subject_applies(s, user, ""))
            {
                continue;
            }
            if self
                .role_rules("", &binding.role_ref)
                .iter()
                .any(|r| rule_allows(r, attrs))
            {
                return Decision::Allow;
            }
        }
        if !attrs.namespace.is_empty() {
            let namespace = attrs.namespace.clone();
            let in_namespace = self
                .role_bindings
                .range((namespace.clone(), String::new())..)
                .take_while(|((ns, _), _)| *ns == namespace);
            for (_, binding) in in_namespace {
                if !binding
                    .subjects
                    .iter()
                    .any(|s| subject_applies(s, user, &namespace))
                {
                    continue;
                }
                let rules = self.role_rules(&namespace, &binding.role_ref);
                if rules.iter().any(|r| rule_allows(r, attrs)) {
                    return Decision::Allow;
                }
            }
        }
        Decision::Deny(format!(
            "RBAC: no rule bound to user {:?} (groups {:?}) allows {} {}",
            user.name,
            user.groups,
            attrs.verb,
            describe(attrs)
        ))
    }

    /// Every rule bound to `user` cluster-wide or in `namespace` (empty: cluster-wide only), in binding order.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
        if user.is_master() {
            return crate::authz::unrestricted_rules();
        }
        let cluster_wide = self
            .cluster_role_bindings
            .values()
            .filter(|b| b.role_ref.kind == "ClusterRole")
            .filter(|b| b.subjects.iter().any(|s| subject_applies(s, user, "")))
            .flat_map(|b| self.role_rules("", &b.role_ref));
        let in_namespace = self
            .role_bindings
            .range((namespace.to_owned(), String::new())..)
            .take_while(|((ns, _), _)| !namespace.is_empty() && ns == namespace)
            .filter(|(_, b)| {
                b.subjects
                    .iter()
                    .any(|s| subject_applies(s, user, namespace))
            })
            .flat_map(|(_, b)| self.role_rules(namespace, &b.role_ref));
        cluster_wide.chain(in_namespace).cloned().collect()
    }

    /// The rules a role reference resolves to; a missing role grants nothing.
    fn role_rules(&self, namespace: &str, role_ref: &RoleRef) -> &[PolicyRule] {
        match role_ref.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .map(|r| r.rules.as_slice())
                .unwrap_or_default(),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(&(namespace.to_owned(), role_ref.name.clone()))
                .map(|r| r.rules.as_slice())
                .unwrap_or_default(),
            _ => &[],
        }
    }
}

fn describe(attrs: &RequestAttributes) -> String {
    if !attrs.resource_request {
        return format!("path {:?}", attrs.path);
    }
    let mut out = attrs.resource.clone();
    if !attrs.subresource.is_empty() {
        out = format!("{out}/{}", attrs.subresource);
    }
    if !attrs.api_group.is_empty() {
        out = format!("{out}.{}", attrs.api_group);
    }
    if !attrs.name.is_empty() {
        out = format!("{out} {:?}", attrs.name);
    }
    if !attrs.namespace.is_empty() {
        out = format!("{out} in namespace {:?}", attrs.namespace);
    }
    out
}

/// The RBAC decision over plain lists of objects (see [`RbacPolicy::authorize`]).
pub fn authorize(
    user: &UserInfo,
    attrs: &RequestAttributes,
    roles: &[Role],
    cluster_roles: &[ClusterRole],
    role_bindings: &[RoleBinding],
    cluster_role_bindings: &[ClusterRoleBinding],
) -> Decision {
    RbacPolicy::from_objects(roles, cluster_roles, role_bindings, cluster_role_bindings)
        .authorize(user, attrs)
}
