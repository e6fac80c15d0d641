//! Which fields of the built-in kinds' Go types are structs held by value (not pointers).
//!
//! Go's `encoding/json` writes such a field even when it is empty and tagged `omitempty`, so
//! kube-apiserver always returns it (`status: {loadBalancer: {}}` on a new Service,
//! `lastState: {}` on a container status). k8s-openapi's schemas cannot tell a value struct from
//! a pointer (both are optional), so this fact is listed here, per OpenAPI definition name, as read
//! from the `k8s.io/api` v0.33 type declarations (stable versions; `metav1.Time`, `Duration`,
//! `Quantity` and `IntOrString` marshal as scalars and are left out). [`crate::schema`] turns each
//! entry into a `default: {}` on the property, as kube-apiserver's own OpenAPI v3 documents mark them.

/// (definition, value-struct properties), sorted by definition for binary search.
const VALUE_STRUCT_FIELDS: &[(&str, &[&str])] = &[
    (
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        &["clientConfig"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        &["metadata"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.MutatingWebhookConfigurationList",
        &["metadata"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        &["metadata", "spec"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingList",
        &["metadata"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyList",
        &["metadata"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        &["clientConfig"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        &["metadata"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfigurationList",
        &["metadata"],
    ),
    ("io.k8s.api.apps.v1.ControllerRevision", &["metadata"]),
    ("io.k8s.api.apps.v1.ControllerRevisionList", &["metadata"]),
    (
        "io.k8s.api.apps.v1.DaemonSet",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.apps.v1.DaemonSetList", &["metadata"]),
    (
        "io.k8s.api.apps.v1.DaemonSetSpec",
        &["template", "updateStrategy"],
    ),
    (
        "io.k8s.api.apps.v1.Deployment",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.apps.v1.DeploymentList", &["metadata"]),
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        &["template", "strategy"],
    ),
    (
        "io.k8s.api.apps.v1.ReplicaSet",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.apps.v1.ReplicaSetList", &["metadata"]),
    ("io.k8s.api.apps.v1.ReplicaSetSpec", &["template"]),
    (
        "io.k8s.api.apps.v1.StatefulSet",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.apps.v1.StatefulSetList", &["metadata"]),
    (
        "io.k8s.api.apps.v1.StatefulSetSpec",
        &["template", "updateStrategy"],
    ),
    (
        "io.k8s.api.authentication.v1.SelfSubjectReview",
        &["metadata", "status"],
    ),
    (
        "io.k8s.api.authentication.v1.SelfSubjectReviewStatus",
        &["userInfo"],
    ),
    (
        "io.k8s.api.authentication.v1.TokenRequest",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.authentication.v1.TokenReview",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.authentication.v1.TokenReviewStatus", &["user"]),
    (
        "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.authorization.v1.SubjectAccessReview",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerList",
        &["metadata"],
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
        &["scaleTargetRef"],
    ),
    ("io.k8s.api.autoscaling.v1.ObjectMetricSource", &["target"]),
    ("io.k8s.api.autoscaling.v1.ObjectMetricStatus", &["target"]),
    (
        "io.k8s.api.autoscaling.v1.Scale",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ContainerResourceMetricSource",
        &["target"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ContainerResourceMetricStatus",
        &["current"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ExternalMetricSource",
        &["metric", "target"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ExternalMetricStatus",
        &["metric", "current"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerList",
        &["metadata"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
        &["scaleTargetRef"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ObjectMetricSource",
        &["describedObject", "target", "metric"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ObjectMetricStatus",
        &["metric", "current", "describedObject"],
    ),
    (
        "io.k8s.api.autoscaling.v2.PodsMetricSource",
        &["metric", "target"],
    ),
    (
        "io.k8s.api.autoscaling.v2.PodsMetricStatus",
        &["metric", "current"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ResourceMetricSource",
        &["target"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ResourceMetricStatus",
        &["current"],
    ),
    (
        "io.k8s.api.batch.v1.CronJob",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.batch.v1.CronJobList", &["metadata"]),
    ("io.k8s.api.batch.v1.CronJobSpec", &["jobTemplate"]),
    ("io.k8s.api.batch.v1.Job", &["metadata", "spec", "status"]),
    ("io.k8s.api.batch.v1.JobList", &["metadata"]),
    ("io.k8s.api.batch.v1.JobSpec", &["template"]),
    ("io.k8s.api.batch.v1.JobTemplateSpec", &["metadata", "spec"]),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequest",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestList",
        &["metadata"],
    ),
    ("io.k8s.api.coordination.v1.Lease", &["metadata", "spec"]),
    ("io.k8s.api.coordination.v1.LeaseList", &["metadata"]),
    ("io.k8s.api.core.v1.Binding", &["metadata", "target"]),
    ("io.k8s.api.core.v1.ComponentStatus", &["metadata"]),
    ("io.k8s.api.core.v1.ComponentStatusList", &["metadata"]),
    ("io.k8s.api.core.v1.ConfigMap", &["metadata"]),
    ("io.k8s.api.core.v1.ConfigMapList", &["metadata"]),
    ("io.k8s.api.core.v1.Container", &["resources"]),
    (
        "io.k8s.api.core.v1.ContainerStatus",
        &["state", "lastState"],
    ),
    ("io.k8s.api.core.v1.Endpoints", &["metadata"]),
    ("io.k8s.api.core.v1.EndpointsList", &["metadata"]),
    ("io.k8s.api.core.v1.EphemeralContainer", &["resources"]),
    (
        "io.k8s.api.core.v1.EphemeralContainerCommon",
        &["resources"],
    ),
    (
        "io.k8s.api.core.v1.Event",
        &["metadata", "involvedObject", "source"],
    ),
    ("io.k8s.api.core.v1.EventList", &["metadata"]),
    ("io.k8s.api.core.v1.LimitRange", &["metadata", "spec"]),
    ("io.k8s.api.core.v1.LimitRangeList", &["metadata"]),
    (
        "io.k8s.api.core.v1.Namespace",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.core.v1.NamespaceList", &["metadata"]),
    ("io.k8s.api.core.v1.Node", &["metadata", "spec", "status"]),
    (
        "io.k8s.api.core.v1.NodeDaemonEndpoints",
        &["kubeletEndpoint"],
    ),
    ("io.k8s.api.core.v1.NodeList", &["metadata"]),
    (
        "io.k8s.api.core.v1.NodeStatus",
        &["daemonEndpoints", "nodeInfo"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolume",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaim",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimList",
        &["metadata"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        &["resources"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimTemplate",
        &["metadata", "spec"],
    ),
    ("io.k8s.api.core.v1.PersistentVolumeList", &["metadata"]),
    ("io.k8s.api.core.v1.Pod", &["metadata", "spec", "status"]),
    ("io.k8s.api.core.v1.PodList", &["metadata"]),
    (
        "io.k8s.api.core.v1.PodStatusResult",
        &["metadata", "status"],
    ),
    ("io.k8s.api.core.v1.PodTemplate", &["metadata", "template"]),
    ("io.k8s.api.core.v1.PodTemplateList", &["metadata"]),
    ("io.k8s.api.core.v1.PodTemplateSpec", &["metadata", "spec"]),
    ("io.k8s.api.core.v1.PreferAvoidPodsEntry", &["podSignature"]),
    (
        "io.k8s.api.core.v1.PreferredSchedulingTerm",
        &["preference"],
    ),
    ("io.k8s.api.core.v1.RangeAllocation", &["metadata"]),
    (
        "io.k8s.api.core.v1.ReplicationController",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.core.v1.ReplicationControllerList",
        &["metadata"],
    ),
    (
        "io.k8s.api.core.v1.ResourceQuota",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.core.v1.ResourceQuotaList", &["metadata"]),
    ("io.k8s.api.core.v1.Secret", &["metadata"]),
    ("io.k8s.api.core.v1.SecretList", &["metadata"]),
    ("io.k8s.api.core.v1.SerializedReference", &["reference"]),
    (
        "io.k8s.api.core.v1.Service",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.core.v1.ServiceAccount", &["metadata"]),
    ("io.k8s.api.core.v1.ServiceAccountList", &["metadata"]),
    ("io.k8s.api.core.v1.ServiceList", &["metadata"]),
    ("io.k8s.api.core.v1.ServiceStatus", &["loadBalancer"]),
    (
        "io.k8s.api.core.v1.WeightedPodAffinityTerm",
        &["podAffinityTerm"],
    ),
    ("io.k8s.api.discovery.v1.Endpoint", &["conditions"]),
    ("io.k8s.api.discovery.v1.EndpointSlice", &["metadata"]),
    ("io.k8s.api.discovery.v1.EndpointSliceList", &["metadata"]),
    (
        "io.k8s.api.events.v1.Event",
        &["metadata", "regarding", "deprecatedSource"],
    ),
    ("io.k8s.api.events.v1.EventList", &["metadata"]),
    (
        "io.k8s.api.flowcontrol.v1.FlowSchema",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.flowcontrol.v1.FlowSchemaList", &["metadata"]),
    (
        "io.k8s.api.flowcontrol.v1.FlowSchemaSpec",
        &["priorityLevelConfiguration"],
    ),
    (
        "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration",
        &["limitResponse"],
    ),
    (
        "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationList",
        &["metadata"],
    ),
    ("io.k8s.api.networking.v1.HTTPIngressPath", &["backend"]),
    ("io.k8s.api.networking.v1.IPAddress", &["metadata", "spec"]),
    ("io.k8s.api.networking.v1.IPAddressList", &["metadata"]),
    (
        "io.k8s.api.networking.v1.Ingress",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.networking.v1.IngressClass",
        &["metadata", "spec"],
    ),
    ("io.k8s.api.networking.v1.IngressClassList", &["metadata"]),
    ("io.k8s.api.networking.v1.IngressList", &["metadata"]),
    ("io.k8s.api.networking.v1.IngressServiceBackend", &["port"]),
    ("io.k8s.api.networking.v1.IngressStatus", &["loadBalancer"]),
    (
        "io.k8s.api.networking.v1.NetworkPolicy",
        &["metadata", "spec"],
    ),
    ("io.k8s.api.networking.v1.NetworkPolicyList", &["metadata"]),
    (
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        &["podSelector"],
    ),
    (
        "io.k8s.api.networking.v1.ServiceCIDR",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.networking.v1.ServiceCIDRList", &["metadata"]),
    ("io.k8s.api.node.v1.RuntimeClass", &["metadata"]),
    ("io.k8s.api.node.v1.RuntimeClassList", &["metadata"]),
    ("io.k8s.api.policy.v1.Eviction", &["metadata"]),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudget",
        &["metadata", "spec", "status"],
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetList",
        &["metadata"],
    ),
    ("io.k8s.api.rbac.v1.ClusterRole", &["metadata"]),
    (
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
        &["metadata", "roleRef"],
    ),
    ("io.k8s.api.rbac.v1.ClusterRoleBindingList", &["metadata"]),
    ("io.k8s.api.rbac.v1.ClusterRoleList", &["metadata"]),
    ("io.k8s.api.rbac.v1.Role", &["metadata"]),
    ("io.k8s.api.rbac.v1.RoleBinding", &["metadata", "roleRef"]),
    ("io.k8s.api.rbac.v1.RoleBindingList", &["metadata"]),
    ("io.k8s.api.rbac.v1.RoleList", &["metadata"]),
    ("io.k8s.api.scheduling.v1.PriorityClass", &["metadata"]),
    ("io.k8s.api.scheduling.v1.PriorityClassList", &["metadata"]),
    ("io.k8s.api.storage.v1.CSIDriver", &["metadata", "spec"]),
    ("io.k8s.api.storage.v1.CSIDriverList", &["metadata"]),
    ("io.k8s.api.storage.v1.CSINode", &["metadata", "spec"]),
    ("io.k8s.api.storage.v1.CSINodeList", &["metadata"]),
    ("io.k8s.api.storage.v1.CSIStorageCapacity", &["metadata"]),
    (
        "io.k8s.api.storage.v1.CSIStorageCapacityList",
        &["metadata"],
    ),
    ("io.k8s.api.storage.v1.StorageClass", &["metadata"]),
    ("io.k8s.api.storage.v1.StorageClassList", &["metadata"]),
    (
        "io.k8s.api.storage.v1.VolumeAttachment",
        &["metadata", "spec", "status"],
    ),
    ("io.k8s.api.storage.v1.VolumeAttachmentList", &["metadata"]),
    ("io.k8s.api.storage.v1.VolumeAttachmentSpec", &["source"]),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
        &["preferredVersion"],
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.List", &["metadata"]),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
        &["metadata"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList",
        &["metadata"],
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Status", &["metadata"]),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Table", &["metadata"]),
];

/// The properties of `definition` that Go holds as value structs.
pub(crate) fn value_struct_fields(definition: &str) -> &'static [&'static str] {
    VALUE_STRUCT_FIELDS
        .binary_search_by(|(name, _)| name.cmp(&definition))
        .map_or(&[], |index| VALUE_STRUCT_FIELDS[index].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(VALUE_STRUCT_FIELDS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn looks_up_value_structs() {
        assert_eq!(
            value_struct_fields("io.k8s.api.core.v1.ServiceStatus"),
            ["loadBalancer"]
        );
        assert_eq!(
            value_struct_fields("io.k8s.api.core.v1.ContainerStatus"),
            ["state", "lastState"]
        );
        assert!(value_struct_fields("io.k8s.api.core.v1.Volume").is_empty());
    }
}
