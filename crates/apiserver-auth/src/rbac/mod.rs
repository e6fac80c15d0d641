//! Kubernetes RBAC (`rbac.authorization.k8s.io/v1`): the object shapes it reads, a pure
//! evaluator, the default roles, and [`RbacAuthorizer`], which evaluates against a live
//! snapshot of the store.
//!
//! Semantics (those of kube-apiserver's RBAC authorizer):
//! - members of `system:masters` are allowed everything without consulting any rule;
//! - ClusterRoleBindings grant their ClusterRole's rules everywhere; RoleBindings grant their
//!   Role's (same namespace) or ClusterRole's rules only inside the binding's namespace;
//! - only allow rules exist: no match means deny;
//! - a binding whose role does not exist grants nothing;
//! - `aggregationRule` on ClusterRoles is ignored (only a role's own `rules` count); the default
//!   roles in [`bootstrap`] are therefore written out in full rather than aggregated.

mod authorizer;
pub mod bootstrap;
mod evaluate;
mod types;

pub use authorizer::{RbacAuthorizer, WAIT_FOR_POLICY};
pub use evaluate::{RbacPolicy, authorize, rule_allows, subject_applies};
pub use types::{
    ClusterRole, ClusterRoleBinding, ObjectName, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

/// The API group of the RBAC kinds.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The store prefix under which all four RBAC kinds live.
pub const RBAC_KEY_PREFIX: &str = "/registry/rbac.authorization.k8s.io/";

/// The store key of an RBAC object: `/registry/<group>/<plural>/[<ns>/]<name>`.
pub fn storage_key(plural: &str, namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        format!("{RBAC_KEY_PREFIX}{plural}/{name}")
    } else {
        format!("{RBAC_KEY_PREFIX}{plural}/{namespace}/{name}")
    }
}
