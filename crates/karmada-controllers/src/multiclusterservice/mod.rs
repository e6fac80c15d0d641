//! MultiClusterService (`networking.karmada.io/v1alpha1`, `types: [CrossCluster]`), as Karmada's
//! `multiclusterservice` and `endpointsliceDispatch` controllers do it (docs/karmada.md, "Multi-cluster Services"):
//!
//! - [`controller`]: claims the Service of the same name (`resourcetemplate.karmada.io/claimed-by:
//!   MultiClusterService`, so policies leave it alone), propagates it to the providers and consumers through a
//!   ResourceBinding it owns, and places a suspended Work holding the MultiClusterService in each provider's
//!   execution namespace — what tells the member side ([`crate::mcs::service_export`]) to collect that
//!   provider's EndpointSlices of the Service; condition `ServiceApplied`.
//! - [`dispatch`]: copies each collected slice of a Ready provider into every consumer (not the provider
//!   itself) under the Service's own name, as `<provider>-<slice>`; condition `EndpointSliceDispatched`.
//!   Changing the provider or consumer lists moves the slices; an unreachable provider's slices are withdrawn
//!   until it is Ready again.
//!
//! An empty provider or consumer list means every cluster. [`plan`] holds the pure parts.

pub mod controller;
pub mod dispatch;
pub mod plan;

/// Finalizer on a MultiClusterService until its Service, binding and Works are released.
pub const FINALIZER: &str = "karmada.io/multiclusterservice-controller";
/// Value of `resourcetemplate.karmada.io/claimed-by` and `binding.karmada.io/managed-by`.
pub const KIND: &str = "MultiClusterService";
/// Annotations naming the MultiClusterService on its Service and binding.
pub const ANNOTATION_NAME: &str = "multiclusterservice.karmada.io/name";
pub const ANNOTATION_NAMESPACE: &str = "multiclusterservice.karmada.io/namespace";
/// Binding label naming what created it.
pub const LABEL_BINDING_MANAGED_BY: &str = "binding.karmada.io/managed-by";
/// Condition reasons and messages (Karmada's).
pub const REASON_SERVICE_APPLIED_SUCCEED: &str = "ServiceAppliedSucceed";
pub const REASON_SERVICE_APPLIED_FAILED: &str = "ServiceAppliedFailed";
pub const REASON_DISPATCHED_SUCCEED: &str = "EndpointSliceDispatchedSucceed";
pub const REASON_DISPATCHED_FAILED: &str = "EndpointSliceDispatchedFailed";
/// Event reasons (Karmada's).
pub const EVENT_SYNC_SERVICE_SUCCEED: &str = "SyncServiceSucceed";
pub const EVENT_SYNC_SERVICE_FAILED: &str = "SyncServiceFailed";
pub const EVENT_CLUSTER_NOT_FOUND: &str = "ClusterNotFound";
pub const EVENT_DISPATCH_SUCCEED: &str = "DispatchEndpointSliceSucceed";
pub const EVENT_DISPATCH_FAILED: &str = "DispatchEndpointSliceFailed";
