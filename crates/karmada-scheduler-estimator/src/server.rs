//! The estimator's gRPC service for one member cluster (Karmada's `Estimator` service): `MaxAvailableReplicas`
//! from the cached Nodes, Pods and (with the ResourceQuotaEstimate gate) ResourceQuotas, through
//! `karmada_scheduler::accurate`; `GetUnschedulableReplicas` from the workload read from the member and the
//! cached pods ([`crate::workload`]); `MaxAvailableComponentSets` (multi-template workloads, behind Karmada's
//! MultiplePodTemplatesScheduling gate) answers Unimplemented, which Karmada's client treats as no answer.
//!
//! A request for another cluster is refused (InvalidArgument), as Karmada does; before the member cache has
//! listed, requests answer Unavailable rather than a guess.

use std::sync::Arc;
use std::time::Instant;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use karmada_scheduler::accurate::max_available_replicas;
use kube::Api;
use kube::api::ListParams;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::metrics::{
    EstimatorMetrics, STEP_GET_OBJECT, STEP_MAX_AVAILABLE_REPLICAS, STEP_TOTAL,
    STEP_UNSCHEDULABLE_PODS, TYPE_GET_UNSCHEDULABLE_REPLICAS, TYPE_MAX_AVAILABLE_REPLICAS,
};
use crate::pb::claim_from_pb;
use crate::pb::messages::{
    MaxAvailableComponentSetsRequest, MaxAvailableComponentSetsResponse,
    MaxAvailableReplicasRequest, MaxAvailableReplicasResponse, UnschedulableReplicasRequest,
    UnschedulableReplicasResponse,
};
use crate::pb::service::estimator_server::{Estimator, EstimatorServer};
use crate::state::MemberState;
use crate::workload::{newest_replica_set, unschedulable_replicas};

/// The service for one cluster.
#[derive(Clone)]
pub struct EstimatorService {
    cluster: String,
    state: Arc<MemberState>,
    /// The member's API, for the workload `GetUnschedulableReplicas` asks about (`None`: not answerable).
    member: Option<kube::Client>,
    /// Karmada's ResourceQuotaEstimate gate.
    quota_estimate: bool,
    metrics: EstimatorMetrics,
}

impl EstimatorService {
    pub fn new(
        cluster: impl Into<String>,
        state: Arc<MemberState>,
        member: Option<kube::Client>,
        quota_estimate: bool,
        metrics: EstimatorMetrics,
    ) -> Self {
        Self {
            cluster: cluster.into(),
            state,
            member,
            quota_estimate,
            metrics,
        }
    }

    fn check(&self, cluster: &str) -> Result<(), Status> {
        if cluster != self.cluster {
            return Err(Status::invalid_argument(format!(
                "cluster name does not match, got: {cluster}, desire: {}",
                self.cluster
            )));
        }
        if !self.state.synced() {
            return Err(Status::unavailable(format!(
                "the estimator of cluster {} has not listed the member's nodes and pods yet",
                self.cluster
            )));
        }
        Ok(())
    }

    /// The answer to one `MaxAvailableReplicas` request (also used in-process by tests and benchmarks).
    pub fn max_available_replicas(
        &self,
        request: &MaxAvailableReplicasRequest,
    ) -> Result<i32, Status> {
        self.check(&request.cluster)?;
        let claim = claim_from_pb(request.replica_requirements.as_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let nodes = self.state.nodes();
        let quotas = if self.quota_estimate {
            self.state.quotas_in(&claim.namespace)
        } else {
            Vec::new()
        };
        Ok(max_available_replicas(&nodes, &quotas, &claim))
    }

    async fn unschedulable(&self, request: &UnschedulableReplicasRequest) -> Result<i32, Status> {
        self.check(&request.cluster)?;
        let Some(resource) = &request.resource else {
            return Err(Status::invalid_argument("resource is nil"));
        };
        if resource.api_version != "apps/v1" || resource.kind != "Deployment" {
            return Err(Status::invalid_argument(format!(
                "kind({}) of workload({}/{}) is not supported; only apps/v1 Deployments are",
                resource.kind, resource.namespace, resource.name
            )));
        }
        let Some(member) = &self.member else {
            return Err(Status::unavailable(
                "no member client to read the workload with",
            ));
        };
        let started = Instant::now();
        let deployments: Api<Deployment> = Api::namespaced(member.clone(), &resource.namespace);
        let deployment = deployments
            .get_opt(&resource.name)
            .await
            .map_err(|e| Status::unavailable(format!("reading the Deployment: {e}")))?
            .ok_or_else(|| {
                Status::not_found(format!(
                    "Deployment {}/{} not found in cluster {}",
                    resource.namespace, resource.name, self.cluster
                ))
            })?;
        let sets: Api<ReplicaSet> = Api::namespaced(member.clone(), &resource.namespace);
        let sets = sets
            .list(&ListParams::default())
            .await
            .map_err(|e| Status::unavailable(format!("listing ReplicaSets: {e}")))?
            .items;
        self.metrics.step(
            TYPE_GET_UNSCHEDULABLE_REPLICAS,
            STEP_GET_OBJECT,
            true,
            started.elapsed().as_secs_f64(),
        );
        let started = Instant::now();
        let Some(current) = newest_replica_set(&deployment, &sets) else {
            return Ok(0);
        };
        let uid = current.metadata.uid.as_deref().unwrap_or_default();
        let pods = self.state.pods_in(&resource.namespace);
        let threshold = SignedDuration::from_nanos(request.unschedulable_threshold);
        let count = unschedulable_replicas(
            pods.iter().map(|p| p.as_ref()),
            uid,
            Timestamp::now(),
            threshold,
        );
        self.metrics.step(
            TYPE_GET_UNSCHEDULABLE_REPLICAS,
            STEP_UNSCHEDULABLE_PODS,
            true,
            started.elapsed().as_secs_f64(),
        );
        Ok(count)
    }
}

#[tonic::async_trait]
impl Estimator for EstimatorService {
    async fn max_available_replicas(
        &self,
        request: Request<MaxAvailableReplicasRequest>,
    ) -> Result<Response<MaxAvailableReplicasResponse>, Status> {
        let started = Instant::now();
        let answer = EstimatorService::max_available_replicas(self, request.get_ref());
        let seconds = started.elapsed().as_secs_f64();
        let ok = answer.is_ok();
        self.metrics.request(TYPE_MAX_AVAILABLE_REPLICAS, ok);
        self.metrics.step(
            TYPE_MAX_AVAILABLE_REPLICAS,
            STEP_MAX_AVAILABLE_REPLICAS,
            ok,
            seconds,
        );
        self.metrics
            .step(TYPE_MAX_AVAILABLE_REPLICAS, STEP_TOTAL, ok, seconds);
        answer.map(|max_replicas| Response::new(MaxAvailableReplicasResponse { max_replicas }))
    }

    async fn max_available_component_sets(
        &self,
        _request: Request<MaxAvailableComponentSetsRequest>,
    ) -> Result<Response<MaxAvailableComponentSetsResponse>, Status> {
        Err(Status::unimplemented(
            "multi-template workloads (MultiplePodTemplatesScheduling) are not estimated here; the scheduler uses its general estimate",
        ))
    }

    async fn get_unschedulable_replicas(
        &self,
        request: Request<UnschedulableReplicasRequest>,
    ) -> Result<Response<UnschedulableReplicasResponse>, Status> {
        let started = Instant::now();
        let answer = self.unschedulable(request.get_ref()).await;
        let ok = answer.is_ok();
        self.metrics.request(TYPE_GET_UNSCHEDULABLE_REPLICAS, ok);
        self.metrics.step(
            TYPE_GET_UNSCHEDULABLE_REPLICAS,
            STEP_TOTAL,
            ok,
            started.elapsed().as_secs_f64(),
        );
        answer.map(|unschedulable_replicas| {
            Response::new(UnschedulableReplicasResponse {
                unschedulable_replicas,
            })
        })
    }
}

/// Serves `service` on `listener` until `cancel` fires.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: EstimatorService,
    cancel: CancellationToken,
) -> Result<(), tonic::transport::Error> {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_service(EstimatorServer::new(service))
        .serve_with_incoming_shutdown(incoming, async move { cancel.cancelled().await })
        .await
}
