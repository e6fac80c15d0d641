//! The built-in Kubernetes kinds this API server serves, as [`ResourceDef`]s.
//!
//! Names, scopes, short names, categories and subresources follow upstream kube-apiserver v1.32.
//! Schemas are generated once (lazily) from k8s-openapi, kept without their field descriptions and
//! shared by every caller; [`described_schema`] regenerates one with them for OpenAPI documents.

use std::sync::{Arc, LazyLock};

use apimachinery::patch::BuiltinPatchMeta;

use apimachinery::{Printer, ResourceDef, ScaleSubresource};
use k8s_openapi::api::{
    apps, autoscaling, batch, certificates, coordination, core, discovery, networking, policy,
    rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use schemars::JsonSchema;
use serde_json::Value;

use crate::schema::inlined_schema_for;

/// One built-in kind, before its schema is generated.
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    tracks_generation: bool,
    schema: fn() -> Option<Value>,
    schema_name: fn() -> String,
    /// False for a version served as a conversion of another (see [`crate::conversion`]).
    storage: bool,
}

fn schema_of<T: JsonSchema>() -> Option<Value> {
    inlined_schema_for::<T>()
}

fn name_of<T: JsonSchema>() -> String {
    T::schema_name().into_owned()
}

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];

macro_rules! builtin {
    ($ty:ty, $group:expr, $version:expr, $kind:expr, $plural:expr, namespaced: $ns:expr, short: $short:expr,
     categories: $cat:expr, status: $status:expr, scale: $scale:expr, generation: $generation:expr) => {
        Builtin {
            group: $group,
            version: $version,
            kind: $kind,
            plural: $plural,
            namespaced: $ns,
            short_names: $short,
            categories: $cat,
            status: $status,
            scale: $scale,
            tracks_generation: $generation,
            schema: schema_of::<$ty>,
            schema_name: name_of::<$ty>,
            storage: true,
        }
    };
}

fn table() -> Vec<Builtin> {
    vec![
        builtin!(core::v1::Namespace, "", "v1", "Namespace", "namespaces", namespaced: false, short: &["ns"],
            categories: NONE, status: true, scale: false, generation: false),
        builtin!(core::v1::ConfigMap, "", "v1", "ConfigMap", "configmaps", namespaced: true, short: &["cm"],
            categories: NONE, status: false, scale: false, generation: false),
        builtin!(core::v1::Secret, "", "v1", "Secret", "secrets", namespaced: true, short: NONE,
            categories: NONE, status: false, scale: false, generation: false),
        builtin!(core::v1::Service, "", "v1", "Service", "services", namespaced: true, short: &["svc"],
            categories: ALL, status: true, scale: false, generation: false),
        builtin!(core::v1::ServiceAccount, "", "v1", "ServiceAccount", "serviceaccounts", namespaced: true,
            short: &["sa"], categories: NONE, status: false, scale: false, generation: false),
        builtin!(core::v1::Event, "", "v1", "Event", "events", namespaced: true, short: &["ev"],
            categories: NONE, status: false, scale: false, generation: false),
        builtin!(core::v1::Endpoints, "", "v1", "Endpoints", "endpoints", namespaced: true, short: &["ep"],
            categories: NONE, status: false, scale: false, generation: false),
        builtin!(core::v1::Pod, "", "v1", "Pod", "pods", namespaced: true, short: &["po"],
            categories: ALL, status: true, scale: false, generation: false),
        builtin!(core::v1::PersistentVolumeClaim, "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims",
            namespaced: true, short: &["pvc"], categories: NONE, status: true, scale: false, generation: false),
        builtin!(core::v1::Node, "", "v1", "Node", "nodes", namespaced: false, short: &["no"],
            categories: NONE, status: true, scale: false, generation: false),
        builtin!(core::v1::PersistentVolume, "", "v1", "PersistentVolume", "persistentvolumes",
            namespaced: false, short: &["pv"], categories: NONE, status: true, scale: false, generation: false),
        builtin!(core::v1::ResourceQuota, "", "v1", "ResourceQuota", "resourcequotas", namespaced: true,
            short: &["quota"], categories: NONE, status: true, scale: false, generation: false),
        builtin!(core::v1::LimitRange, "", "v1", "LimitRange", "limitranges", namespaced: true,
            short: &["limits"], categories: NONE, status: false, scale: false, generation: false),
        builtin!(core::v1::PodTemplate, "", "v1", "PodTemplate", "podtemplates", namespaced: true,
            short: NONE, categories: NONE, status: false, scale: false, generation: true),
        builtin!(core::v1::ReplicationController, "", "v1", "ReplicationController", "replicationcontrollers",
            namespaced: true, short: &["rc"], categories: ALL, status: true, scale: true, generation: true),
        builtin!(apps::v1::Deployment, "apps", "v1", "Deployment", "deployments", namespaced: true,
            short: &["deploy"], categories: ALL, status: true, scale: true, generation: true),
        builtin!(apps::v1::StatefulSet, "apps", "v1", "StatefulSet", "statefulsets", namespaced: true,
            short: &["sts"], categories: ALL, status: true, scale: true, generation: true),
        builtin!(apps::v1::DaemonSet, "apps", "v1", "DaemonSet", "daemonsets", namespaced: true,
            short: &["ds"], categories: ALL, status: true, scale: false, generation: true),
        builtin!(apps::v1::ReplicaSet, "apps", "v1", "ReplicaSet", "replicasets", namespaced: true,
            short: &["rs"], categories: ALL, status: true, scale: true, generation: true),
        builtin!(batch::v1::Job, "batch", "v1", "Job", "jobs", namespaced: true, short: NONE,
            categories: ALL, status: true, scale: false, generation: true),
        builtin!(batch::v1::CronJob, "batch", "v1", "CronJob", "cronjobs", namespaced: true, short: &["cj"],
            categories: ALL, status: true, scale: false, generation: true),
        builtin!(networking::v1::Ingress, "networking.k8s.io", "v1", "Ingress", "ingresses", namespaced: true,
            short: &["ing"], categories: NONE, status: true, scale: false, generation: true),
        builtin!(networking::v1::NetworkPolicy, "networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies",
            namespaced: true, short: &["netpol"], categories: NONE, status: false, scale: false, generation: true),
        builtin!(networking::v1::IngressClass, "networking.k8s.io", "v1", "IngressClass", "ingressclasses",
            namespaced: false, short: NONE, categories: NONE, status: false, scale: false, generation: true),
        builtin!(policy::v1::PodDisruptionBudget, "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets",
            namespaced: true, short: &["pdb"], categories: NONE, status: true, scale: false, generation: true),
        builtin!(autoscaling::v2::HorizontalPodAutoscaler, "autoscaling", "v2", "HorizontalPodAutoscaler",
            "horizontalpodautoscalers", namespaced: true, short: &["hpa"], categories: ALL, status: true,
            scale: false, generation: false),
        // Stored as v2; kubectl 1.32's `kubectl autoscale` still writes v1.
        Builtin {
            storage: false,
            ..builtin!(autoscaling::v1::HorizontalPodAutoscaler, "autoscaling", "v1", "HorizontalPodAutoscaler",
                "horizontalpodautoscalers", namespaced: true, short: &["hpa"], categories: ALL, status: true,
                scale: false, generation: false)
        },
        builtin!(storage::v1::StorageClass, "storage.k8s.io", "v1", "StorageClass", "storageclasses",
            namespaced: false, short: &["sc"], categories: NONE, status: false, scale: false, generation: false),
        builtin!(scheduling::v1::PriorityClass, "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses",
            namespaced: false, short: &["pc"], categories: NONE, status: false, scale: false, generation: false),
        builtin!(discovery::v1::EndpointSlice, "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices",
            namespaced: true, short: NONE, categories: NONE, status: false, scale: false, generation: true),
        builtin!(coordination::v1::Lease, "coordination.k8s.io", "v1", "Lease", "leases", namespaced: true,
            short: NONE, categories: NONE, status: false, scale: false, generation: false),
        builtin!(rbac::v1::Role, "rbac.authorization.k8s.io", "v1", "Role", "roles", namespaced: true,
            short: NONE, categories: NONE, status: false, scale: false, generation: false),
        builtin!(rbac::v1::RoleBinding, "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings",
            namespaced: true, short: NONE, categories: NONE, status: false, scale: false, generation: false),
        builtin!(rbac::v1::ClusterRole, "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles",
            namespaced: false, short: NONE, categories: NONE, status: false, scale: false, generation: false),
        builtin!(rbac::v1::ClusterRoleBinding, "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding",
            "clusterrolebindings", namespaced: false, short: NONE, categories: NONE, status: false, scale: false,
            generation: false),
        builtin!(certificates::v1::CertificateSigningRequest, "certificates.k8s.io", "v1",
            "CertificateSigningRequest", "certificatesigningrequests", namespaced: false, short: &["csr"],
            categories: NONE, status: true, scale: false, generation: false),
        builtin!(CustomResourceDefinition, "apiextensions.k8s.io", "v1", "CustomResourceDefinition",
            "customresourcedefinitions", namespaced: false, short: &["crd", "crds"], categories: &["api-extensions"],
            status: true, scale: false, generation: true),
        builtin!(APIService, "apiregistration.k8s.io", "v1", "APIService", "apiservices", namespaced: false,
            short: NONE, categories: &["api-extensions"], status: true, scale: false, generation: false),
    ]
}

/// Every built-in kind with its schema. Schemas are generated on the first call only.
pub fn resource_defs() -> Vec<ResourceDef> {
    DEFS.clone()
}

static DEFS: LazyLock<Vec<ResourceDef>> = LazyLock::new(|| table().iter().map(to_def).collect());

/// Upstream's OpenAPI definition name of a built-in kind (`io.k8s.api.apps.v1.Deployment`).
pub fn schema_name(group: &str, version: &str, kind: &str) -> Option<String> {
    table()
        .into_iter()
        .find(|b| b.group == group && b.version == version && b.kind == kind)
        .map(|b| (b.schema_name)())
}

fn to_def(builtin: &Builtin) -> ResourceDef {
    ResourceDef {
        group: builtin.group.into(),
        version: builtin.version.into(),
        kind: builtin.kind.into(),
        plural: builtin.plural.into(),
        singular: builtin.kind.to_ascii_lowercase(),
        namespaced: builtin.namespaced,
        short_names: builtin.short_names.iter().map(|s| s.to_string()).collect(),
        categories: builtin.categories.iter().map(|s| s.to_string()).collect(),
        status_subresource: builtin.status,
        scale_subresource: builtin.scale.then(|| ScaleSubresource {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            // Built-in kinds have no selector field in their status: kube-apiserver renders the Scale's
            // from the spec (see `scale_selector`).
            label_selector_path: None,
        }),
        builtin: true,
        tracks_generation: builtin.tracks_generation,
        printer: Printer::Builtin,
        schema: annotated_schema(builtin).map(|mut schema| {
            crate::schema::strip_descriptions(&mut schema);
            Arc::new(schema)
        }),
        storage_version: builtin.storage,
    }
}

/// `builtin`'s schema with its patch extensions and the field descriptions.
fn annotated_schema(builtin: &Builtin) -> Option<Value> {
    (builtin.schema)().map(|mut schema| {
        crate::patch_extensions::annotate(&mut schema, &BuiltinPatchMeta::for_kind(builtin.kind));
        schema
    })
}

/// A built-in kind's schema as its OpenAPI document shows it, field descriptions included (for
/// `kubectl explain`). Generated on each call: the served definitions keep their schemas without
/// descriptions, which are most of a schema's text and which pruning and field validation never
/// read (kept, they cost each API server about 8 MiB of idle RSS).
pub fn described_schema(group: &str, version: &str, kind: &str) -> Option<Value> {
    table()
        .iter()
        .find(|b| b.group == group && b.version == version && b.kind == kind)
        .and_then(annotated_schema)
}

static SCALE_SCHEMA: LazyLock<Option<Value>> =
    LazyLock::new(schema_of::<k8s_openapi::api::autoscaling::v1::Scale>);

/// The inlined schema of `autoscaling/v1` Scale, the body of every `scale` subresource.
pub fn scale_schema() -> Option<Value> {
    SCALE_SCHEMA.clone()
}

/// The `status.selector` of a built-in kind's Scale: its pod selector in label selector syntax, as
/// kube-apiserver renders it (`app=web,tier in (a,b)`). A ReplicationController's selector is a plain
/// map; the others' a `LabelSelector`. `None` when the object has no selector.
pub fn scale_selector(kind: &str, object: &Value) -> Option<String> {
    let selector = object.pointer("/spec/selector").filter(|s| s.is_object())?;
    Some(if kind == "ReplicationController" {
        crate::tables::selector_string(Some(&serde_json::json!({ "matchLabels": selector })))
    } else {
        crate::tables::selector_string(Some(selector))
    })
}
