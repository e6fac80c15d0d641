//! Multi-cluster Services (the `multicluster.x-k8s.io` API), as Karmada's `serviceExport`, `endpointSlice` and
//! `serviceImport` controllers do it (docs/karmada.md, "Multi-cluster Services"):
//!
//! ```text
//! member: ServiceExport + Service + EndpointSlices
//!   → service_export (Push: controller-manager; Pull: the agent): each member EndpointSlice of an exported
//!     Service reported as a Work in karmada-es-<cluster> that is never applied back (suspendDispatching),
//!     plus one Work reporting the exported Service itself (its ports and type, for conflict detection)
//!   → endpointslice (controller-manager): each reported slice becomes imported-<cluster>-<slice> in the
//!     control plane, labelled kubernetes.io/service-name: derived-<svc>, while its cluster is Ready
//!   → service_import (controller-manager): each ServiceImport gets derived-<svc> with the import's ports, and
//!     status.clusters = the clusters whose slices back it
//!   → a policy selecting the ServiceImport propagates its dependencies (the derived Service and slices) to
//!     the importing clusters, whose DNS answers <svc>.<ns>.svc.clusterset.local (member-sim)
//! ```
//!
//! [`export_conditions`] turns the reports into the control-plane ServiceExport's `Valid` and `Conflict`
//! conditions (the MCS KEP's conflict rules; the oldest export wins). Each step is a pure core beside its
//! runtime: [`report`] / [`service_export`], [`derive`] / [`endpointslice`], [`import`] / [`service_import`],
//! [`export_conditions`] / [`export_status`]; [`backing`] counts the endpoints each cluster backs an import
//! with (service-import status, `karmadactl get serviceimports -o wide` and describe).

pub mod backing;
pub mod derive;
pub mod endpointslice;
pub mod export_conditions;
pub mod export_status;
pub mod import;
pub mod report;
pub mod service_export;
pub mod service_import;
pub mod shared;
pub mod writes;

/// Reported-Work labels naming the exported Service (Karmada's `ServiceNamespaceLabel`, `ServiceNameLabel`).
pub const LABEL_SERVICE_NAMESPACE: &str = "endpointslice.karmada.io/namespace";
pub const LABEL_SERVICE_NAME: &str = "endpointslice.karmada.io/name";
/// Reported-Work labels naming the MultiClusterService that collects the slice.
pub const LABEL_MCS_NAMESPACE: &str = "multiclusterservice.karmada.io/namespace";
pub const LABEL_MCS_NAME: &str = "multiclusterservice.karmada.io/name";
/// Reported-Work label: who reports it, `.`-joined (`ServiceExport`, `MultiClusterService`).
pub const LABEL_WORK_MANAGED_BY: &str = "endpointslice.karmada.io/managed-by";
/// Managers named in [`LABEL_WORK_MANAGED_BY`].
pub const MANAGER_SERVICE_EXPORT: &str = "ServiceExport";
pub const MANAGER_MULTI_CLUSTER_SERVICE: &str = "MultiClusterService";
/// Annotation naming the cluster an EndpointSlice was collected from (Karmada puts it on dispatched slices and
/// their Works; here the imported slices carry it too).
pub const ANNOTATION_PROVISION_CLUSTER: &str = "endpointslice.karmada.io/provision-cluster";
/// Finalizer on reported slice Works: the imported slice goes before the Work.
pub const FINALIZER_ENDPOINT_SLICE_CONTROLLER: &str = "karmada.io/endpointslice-controller";
/// Finalizer on slice Works a MultiClusterService collects: the dispatched copies go before the Work.
pub const FINALIZER_MCS_DISPATCH: &str = "karmada.io/mcs-endpointslice-dispatch-controller";
/// EndpointSlice labels (discovery.k8s.io).
pub const LABEL_ENDPOINT_SLICE_SERVICE_NAME: &str = "kubernetes.io/service-name";
pub const LABEL_ENDPOINT_SLICE_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// [`LABEL_ENDPOINT_SLICE_MANAGED_BY`] values of the slices Karmada writes.
pub const ENDPOINT_SLICE_CONTROLLER_VALUE: &str = "endpointslice-controller.karmada.io";
pub const ENDPOINT_SLICE_DISPATCH_CONTROLLER_VALUE: &str =
    "endpointslice-dispatch-controller.karmada.io";
/// The kind string the Work reporting an exported Service is named after (no template has it, so the name
/// never meets a propagated Service's Work).
pub const EXPORTED_SERVICE_WORK_KIND: &str = "ExportedService";

/// Whether a member EndpointSlice was written by Karmada (imported or dispatched), so it is never reported back.
pub fn managed_by_karmada(managed_by: Option<&str>) -> bool {
    matches!(
        managed_by,
        Some(ENDPOINT_SLICE_CONTROLLER_VALUE | ENDPOINT_SLICE_DISPATCH_CONTROLLER_VALUE)
    )
}

/// The managers a `.`-joined [`LABEL_WORK_MANAGED_BY`] value names.
pub fn managers(value: Option<&str>) -> std::collections::BTreeSet<String> {
    value
        .unwrap_or_default()
        .split('.')
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .collect()
}
