//! Label and annotation keys the controllers write (docs/karmada.md, "Labels and annotations") that `karmada-api` does
//! not define yet. Keys it does define are re-exported so controllers import every key from one place.

pub use karmada_api::policy::{
    ANNOTATION_APPLIED_CLUSTER_OVERRIDES, ANNOTATION_APPLIED_OVERRIDES,
    ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME, ANNOTATION_PROPAGATION_POLICY_NAME,
    ANNOTATION_PROPAGATION_POLICY_NAMESPACE, LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
    LABEL_PROPAGATION_POLICY_PERMANENT_ID,
};
pub use karmada_api::work::{
    LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID, LABEL_MANAGED,
    LABEL_RESOURCE_BINDING_PERMANENT_ID, LABEL_WORK_PERMANENT_ID,
};
pub use karmada_interpreter::{
    ANNOTATION_MANAGED_ANNOTATIONS, ANNOTATION_MANAGED_LABELS,
    ANNOTATION_RESOURCE_TEMPLATE_GENERATION, LABEL_RETAIN_REPLICAS,
};

/// Value of [`LABEL_MANAGED`].
pub const MANAGED_VALUE: &str = "true";
/// Label on the `karmada-es-*` namespaces.
pub const LABEL_KARMADA_SYSTEM: &str = "karmada.io/system";
/// Namespace label that turns namespace auto-propagation off (`"true"`).
pub const LABEL_SKIP_AUTO_PROPAGATION: &str = "namespace.karmada.io/skip-auto-propagation";
/// Template label: another Karmada feature (e.g. MultiClusterService) owns this template; policies ignore it.
pub const LABEL_CLAIMED_BY: &str = "resourcetemplate.karmada.io/claimed-by";
/// Work and member-object annotations naming the source ResourceBinding.
pub const ANNOTATION_RESOURCE_BINDING_NAMESPACE: &str = "resourcebinding.karmada.io/namespace";
pub const ANNOTATION_RESOURCE_BINDING_NAME: &str = "resourcebinding.karmada.io/name";
/// Work and member-object annotation naming the source ClusterResourceBinding.
pub const ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME: &str = "clusterresourcebinding.karmada.io/name";
/// Member-object annotations naming the owning Work.
pub const ANNOTATION_WORK_NAMESPACE: &str = "work.karmada.io/namespace";
pub const ANNOTATION_WORK_NAME: &str = "work.karmada.io/name";
/// Template, Work and member-object annotation: `overwrite` or `abort`.
pub const ANNOTATION_CONFLICT_RESOLUTION: &str = "work.karmada.io/conflict-resolution";
pub const CONFLICT_RESOLUTION_OVERWRITE: &str = "overwrite";
pub const CONFLICT_RESOLUTION_ABORT: &str = "abort";
/// Member-object annotation with the template's UID.
pub const ANNOTATION_RESOURCE_TEMPLATE_UID: &str = "resourcetemplate.karmada.io/uid";
/// Annotation kubectl writes on `apply`; never propagated.
pub const ANNOTATION_LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
