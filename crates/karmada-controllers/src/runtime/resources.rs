//! kube `ApiResource`s of the Karmada kinds the controllers watch and write.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

use super::RawObject;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub fn resource_binding() -> ApiResource {
    resource(
        karmada_api::work::GROUP,
        karmada_api::work::BINDING_VERSION,
        "ResourceBinding",
        "resourcebindings",
    )
}

pub fn cluster_resource_binding() -> ApiResource {
    resource(
        karmada_api::work::GROUP,
        karmada_api::work::BINDING_VERSION,
        "ClusterResourceBinding",
        "clusterresourcebindings",
    )
}

pub fn work() -> ApiResource {
    resource(
        karmada_api::work::GROUP,
        karmada_api::work::WORK_VERSION,
        "Work",
        "works",
    )
}

pub fn propagation_policy() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
    )
}

pub fn cluster_propagation_policy() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "ClusterPropagationPolicy",
        "clusterpropagationpolicies",
    )
}

pub fn override_policy() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "OverridePolicy",
        "overridepolicies",
    )
}

pub fn cluster_override_policy() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "ClusterOverridePolicy",
        "clusteroverridepolicies",
    )
}

pub fn service_export() -> ApiResource {
    resource(
        karmada_api::mcs::GROUP,
        karmada_api::mcs::VERSION,
        "ServiceExport",
        "serviceexports",
    )
}

pub fn service_import() -> ApiResource {
    resource(
        karmada_api::mcs::GROUP,
        karmada_api::mcs::VERSION,
        "ServiceImport",
        "serviceimports",
    )
}

pub fn multi_cluster_service() -> ApiResource {
    resource(
        karmada_api::networking::GROUP,
        karmada_api::networking::VERSION,
        "MultiClusterService",
        "multiclusterservices",
    )
}

pub fn service() -> ApiResource {
    resource("", "v1", "Service", "services")
}

pub fn endpoint_slice() -> ApiResource {
    resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
}

pub fn scheduler_profile() -> ApiResource {
    resource(
        karmada_api::scheduling::GROUP,
        karmada_api::scheduling::VERSION,
        "SchedulerProfile",
        "schedulerprofiles",
    )
}

pub fn cluster() -> ApiResource {
    crate::cluster::api::cluster_resource()
}

/// Every object of `resource`, across namespaces.
pub fn all(client: &kube::Client, resource: &ApiResource) -> Api<DynamicObject> {
    Api::all_with(client.clone(), resource)
}

/// Every object of `resource`, read for its metadata only: a watch that needs names, namespaces or owners
/// skips each body while decoding instead of building it (a Work's or binding's status is most of its text).
pub fn all_metadata(
    client: &kube::Client,
    resource: &ApiResource,
) -> Api<kube::core::PartialObjectMeta<DynamicObject>> {
    Api::all_with(client.clone(), resource)
}

/// Every object of `resource`, read as [`RawObject`]s: what a watch into a compact cache takes.
pub fn all_raw(client: &kube::Client, resource: &ApiResource) -> Api<RawObject> {
    Api::all_with(client.clone(), resource)
}

/// Objects of `resource` in `namespace`, read as [`RawObject`]s.
pub fn namespaced_raw(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: &str,
) -> Api<RawObject> {
    Api::namespaced_with(client.clone(), namespace, resource)
}

/// Objects of `resource` in `namespace`.
pub fn namespaced(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: &str,
) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, resource)
}

pub fn resource_interpreter_customization() -> ApiResource {
    resource(
        karmada_api::config::GROUP,
        karmada_api::config::VERSION,
        "ResourceInterpreterCustomization",
        "resourceinterpretercustomizations",
    )
}

pub fn resource_interpreter_webhook_configuration() -> ApiResource {
    resource(
        karmada_api::config::GROUP,
        karmada_api::config::VERSION,
        "ResourceInterpreterWebhookConfiguration",
        "resourceinterpreterwebhookconfigurations",
    )
}
