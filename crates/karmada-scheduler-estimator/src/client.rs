//! What the scheduler and the descheduler call: each member cluster's estimator, found as Karmada finds it — the
//! Service `<prefix>-<cluster>` in `<namespace>` of the control plane (`karmada-scheduler-estimator-member1` in
//! `karmada-system`), of type ExternalName, whose port `--scheduler-estimator-port` (10352) names the target port
//! on the external name — and asked over one HTTP/2 connection per cluster, each call bounded by
//! `--scheduler-estimator-timeout`.
//!
//! A cluster without a Service has no estimator: the answer is missing and the scheduler uses its general
//! estimate alone (looked up again after [`RESOLVE_RETRY`]). A failed call drops the connection, so a restarted
//! estimator on another port is found again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use karmada_api::ReplicaRequirements;
use karmada_scheduler::scheduler::AccurateEstimates;
use kube::Api;
use tonic::transport::{Channel, Endpoint};

use crate::cache::{AnswerCache, Lookup, Shape};
use crate::pb::messages::{
    MaxAvailableReplicasRequest, ObjectReference, UnschedulableReplicasRequest,
};
use crate::pb::requirements_to_pb;
use crate::pb::service::estimator_client::EstimatorClient;
use crate::{DEFAULT_PORT, DEFAULT_SERVICE_NAMESPACE, DEFAULT_SERVICE_PREFIX, UNAUTHENTIC_REPLICA};

/// How long a cluster found without an estimator is not looked up again.
pub const RESOLVE_RETRY: Duration = Duration::from_secs(10);

/// Where estimators are found and how long a call may take.
#[derive(Clone, Debug)]
pub struct EstimatorClientConfig {
    /// `--scheduler-estimator-service-namespace`.
    pub namespace: String,
    /// `--scheduler-estimator-service-prefix`.
    pub prefix: String,
    /// `--scheduler-estimator-port`.
    pub port: u16,
    /// `--scheduler-estimator-timeout` (Karmada's default 3 s).
    pub timeout: Duration,
    /// `--scheduler-estimator-cache-ttl`: how long an answer is reused for the same requirements (zero: never).
    pub cache_ttl: Duration,
}

impl Default for EstimatorClientConfig {
    fn default() -> Self {
        Self {
            namespace: DEFAULT_SERVICE_NAMESPACE.into(),
            prefix: DEFAULT_SERVICE_PREFIX.into(),
            port: DEFAULT_PORT,
            timeout: Duration::from_secs(3),
            cache_ttl: Duration::from_secs(1),
        }
    }
}

/// How cluster names become addresses.
enum Resolver {
    /// Karmada's: ExternalName Services in the control plane.
    Services(kube::Client),
    /// Fixed `host:port` per cluster (benchmarks and tests).
    Fixed(HashMap<String, String>),
}

enum Slot {
    Connected(Channel),
    /// No estimator found; not looked up again before the instant.
    Missing(Instant),
}

/// The estimator clients of one scheduler or descheduler.
pub struct EstimatorClients {
    resolver: Resolver,
    config: EstimatorClientConfig,
    slots: Mutex<HashMap<String, Slot>>,
    answers: AnswerCache,
    /// One call in flight per member and requirements: the bindings decided meanwhile wait for its answer.
    in_flight: Mutex<HashMap<AnswerKey, Arc<tokio::sync::Mutex<()>>>>,
    /// Refreshes of stale answers, owned here (dropped with the clients) and one per member and requirements.
    refreshes: Mutex<Refreshes>,
    /// Members dialled ahead of their first question ([`Self::connect_ahead`]), until the dial ends.
    dialling: Mutex<std::collections::HashSet<String>>,
    /// Clusters a decision had to ask itself (nothing kept, nothing asked ahead): each such wait is a round.
    asked_by_decisions: AtomicU64,
}

/// A member and the shape of the replica requirements asked about.
type AnswerKey = (String, u64);

/// The background refreshes running, and which answers they refresh.
type Refreshes = (
    tokio::task::JoinSet<()>,
    std::collections::HashSet<AnswerKey>,
);

/// Why a cluster's estimator gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum EstimatorError {
    #[error("cluster {0} has no scheduler estimator ({1})")]
    NotFound(String, String),
    #[error("scheduler estimator of cluster {cluster}: {message}")]
    Call { cluster: String, message: String },
}

impl EstimatorClients {
    /// Clients that find estimators through the control plane's Services.
    pub fn new(control_plane: kube::Client, config: EstimatorClientConfig) -> Arc<Self> {
        Arc::new(Self {
            resolver: Resolver::Services(control_plane),
            answers: AnswerCache::new(config.cache_ttl),
            config,
            slots: Mutex::default(),
            in_flight: Mutex::default(),
            refreshes: Mutex::default(),
            dialling: Mutex::default(),
            asked_by_decisions: AtomicU64::default(),
        })
    }

    /// Clients with fixed addresses (`cluster → host:port`).
    pub fn fixed(addresses: HashMap<String, String>, config: EstimatorClientConfig) -> Arc<Self> {
        Arc::new(Self {
            resolver: Resolver::Fixed(addresses),
            answers: AnswerCache::new(config.cache_ttl),
            config,
            slots: Mutex::default(),
            in_flight: Mutex::default(),
            refreshes: Mutex::default(),
            dialling: Mutex::default(),
            asked_by_decisions: AtomicU64::default(),
        })
    }

    pub fn config(&self) -> &EstimatorClientConfig {
        &self.config
    }

    fn service_name(&self, cluster: &str) -> String {
        format!("{}-{cluster}", self.config.prefix)
    }

    async fn address(&self, cluster: &str) -> Result<String, EstimatorError> {
        let not_found = |why: String| EstimatorError::NotFound(cluster.to_string(), why);
        match &self.resolver {
            Resolver::Fixed(addresses) => addresses
                .get(cluster)
                .cloned()
                .ok_or_else(|| not_found("no address given".into())),
            Resolver::Services(client) => {
                let name = self.service_name(cluster);
                let services: Api<Service> =
                    Api::namespaced(client.clone(), &self.config.namespace);
                let service = services
                    .get_opt(&name)
                    .await
                    .map_err(|e| {
                        not_found(format!(
                            "reading Service {}/{name}: {e}",
                            self.config.namespace
                        ))
                    })?
                    .ok_or_else(|| {
                        not_found(format!("no Service {}/{name}", self.config.namespace))
                    })?;
                service_address(&service, self.config.port).map_err(not_found)
            }
        }
    }

    async fn client(&self, cluster: &str) -> Result<EstimatorClient<Channel>, EstimatorError> {
        self.channel(cluster).await.map(EstimatorClient::new)
    }

    fn endpoint(&self, cluster: &str, address: &str) -> Result<Endpoint, EstimatorError> {
        Endpoint::from_shared(format!("http://{address}"))
            .map(|endpoint| {
                endpoint
                    .connect_timeout(self.config.timeout)
                    .tcp_nodelay(true)
            })
            .map_err(|e| {
                EstimatorError::NotFound(cluster.to_string(), format!("address {address}: {e}"))
            })
    }

    /// `cluster`'s connection, made (lazily: dialled on first use) if there is none.
    async fn channel(&self, cluster: &str) -> Result<Channel, EstimatorError> {
        {
            let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            match slots.get(cluster) {
                Some(Slot::Connected(channel)) => return Ok(channel.clone()),
                Some(Slot::Missing(until)) if Instant::now() < *until => {
                    return Err(EstimatorError::NotFound(
                        cluster.to_string(),
                        "not found on the last look".into(),
                    ));
                }
                _ => {}
            }
        }
        let found = self.address(cluster).await.and_then(|address| {
            self.endpoint(cluster, &address)
                .map(|endpoint| endpoint.connect_lazy())
        });
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        match &found {
            Ok(channel) => slots.insert(cluster.to_string(), Slot::Connected(channel.clone())),
            Err(_) => slots.insert(
                cluster.to_string(),
                Slot::Missing(Instant::now() + RESOLVE_RETRY),
            ),
        };
        found
    }

    /// Dials `clusters`' estimators now, in the background, as Karmada's scheduler does when a cluster appears:
    /// the first binding asking then waits for the answer only, not for the TCP and HTTP/2 handshakes.
    /// A cluster already connected (or found without an estimator) is left as it is.
    pub fn connect_ahead<'a>(self: &Arc<Self>, clusters: impl IntoIterator<Item = &'a str>) {
        let fresh: Vec<String> = {
            let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            let mut dialling = self.dialling.lock().unwrap_or_else(PoisonError::into_inner);
            clusters
                .into_iter()
                .filter(|cluster| {
                    !slots.contains_key(*cluster) && dialling.insert(cluster.to_string())
                })
                .map(str::to_string)
                .collect()
        };
        if fresh.is_empty() {
            return;
        }
        let mut refreshes = self
            .refreshes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while refreshes.0.try_join_next().is_some() {}
        for cluster in fresh {
            let clients = Arc::clone(self);
            refreshes.0.spawn(async move {
                let endpoint = match clients.address(&cluster).await {
                    Ok(address) => clients.endpoint(&cluster, &address),
                    Err(err) => Err(err),
                };
                let dialled = match endpoint {
                    Ok(endpoint) => endpoint.connect().await.map_err(|e| e.to_string()),
                    Err(err) => Err(err.to_string()),
                };
                match dialled {
                    Ok(channel) => {
                        clients
                            .slots
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .entry(cluster.clone())
                            .or_insert(Slot::Connected(channel));
                    }
                    // Asked for later, it is dialled (or looked up) again then.
                    Err(err) => tracing::debug!(%cluster, %err, "estimator not reachable yet"),
                }
                clients
                    .dialling
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&cluster);
            });
        }
    }

    fn forget(&self, cluster: &str) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(cluster);
    }

    /// One cluster's `MaxAvailableReplicas` answer.
    pub async fn max_available_replicas(
        &self,
        cluster: &str,
        requirements: Option<&ReplicaRequirements>,
    ) -> Result<i32, EstimatorError> {
        let mut client = self.client(cluster).await?;
        let mut request = tonic::Request::new(MaxAvailableReplicasRequest {
            cluster: cluster.to_string(),
            replica_requirements: requirements.map(requirements_to_pb),
            assumed_workloads: Vec::new(),
        });
        request.set_timeout(self.config.timeout);
        let call =
            tokio::time::timeout(self.config.timeout, client.max_available_replicas(request));
        self.settle(cluster, call.await)
            .map(|response| response.max_replicas)
    }

    /// A call's outcome: its answer, or why there is none (a connection found Unavailable is dropped, so the
    /// next call dials again).
    fn settle<T>(
        &self,
        cluster: &str,
        outcome: Result<Result<tonic::Response<T>, tonic::Status>, tokio::time::error::Elapsed>,
    ) -> Result<T, EstimatorError> {
        match outcome {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => {
                if status.code() == tonic::Code::Unavailable {
                    self.forget(cluster);
                }
                Err(EstimatorError::Call {
                    cluster: cluster.to_string(),
                    message: status.message().to_string(),
                })
            }
            Err(_) => Err(EstimatorError::Call {
                cluster: cluster.to_string(),
                message: format!("no answer within {:?}", self.config.timeout),
            }),
        }
    }

    /// Asks every cluster in `clusters` at once (a cluster answered within the cache ttl for the same
    /// requirements is not asked again; a stale answer is used while it is refreshed in the background);
    /// clusters without an answer (or answering Karmada's -1) are left out.
    pub async fn estimates(
        self: &Arc<Self>,
        clusters: &[Arc<str>],
        requirements: Option<&ReplicaRequirements>,
    ) -> AccurateEstimates {
        self.ask(clusters, requirements, true).await
    }

    /// [`Self::estimates`] ahead of the decisions that will need them (a binding of `requirements` was queued):
    /// a decision made meanwhile waits for this round rather than starting its own, and one made after finds
    /// the answers kept. Not counted in [`Self::asked_by_decisions`].
    pub async fn ask_ahead(
        self: &Arc<Self>,
        clusters: &[Arc<str>],
        requirements: Option<&ReplicaRequirements>,
    ) -> AccurateEstimates {
        self.ask(clusters, requirements, false).await
    }

    /// How many cluster answers decisions have asked for themselves (nothing kept for them): each decision
    /// that did waited for a round to its estimators.
    pub fn asked_by_decisions(&self) -> u64 {
        self.asked_by_decisions.load(Ordering::Relaxed)
    }

    async fn ask(
        self: &Arc<Self>,
        clusters: &[Arc<str>],
        requirements: Option<&ReplicaRequirements>,
        decision: bool,
    ) -> AccurateEstimates {
        let shape = &Shape::of(requirements);
        // One look at the cache for every cluster (a binding asks about all feasible members at once).
        let kept = self.answers.lookup_all(clusters, shape, Instant::now());
        let stale: Vec<&str> = clusters
            .iter()
            .zip(&kept)
            .filter(|(_, lookup)| matches!(lookup, Lookup::Stale(_)))
            .map(|(cluster, _)| &**cluster)
            .collect();
        self.refresh(&stale, shape, requirements);
        if decision {
            let missing = kept.iter().filter(|l| **l == Lookup::Missing).count();
            self.asked_by_decisions
                .fetch_add(missing as u64, Ordering::Relaxed);
        }
        let calls = clusters
            .iter()
            .zip(kept)
            .map(|(cluster, lookup)| async move {
                match lookup {
                    Lookup::Fresh(kept) | Lookup::Stale(kept) => Some((cluster.to_string(), kept)),
                    Lookup::Missing => self
                        .fetch(cluster, shape, requirements)
                        .await
                        .map(|answer| (cluster.to_string(), answer)),
                }
            });
        futures::future::join_all(calls)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Asks `cluster` (one call at a time per cluster and requirements: a caller finding one in flight waits
    /// for its answer) and keeps the answer.
    async fn fetch(
        &self,
        cluster: &str,
        shape: &Shape,
        requirements: Option<&ReplicaRequirements>,
    ) -> Option<i64> {
        let gate = (!self.config.cache_ttl.is_zero()).then(|| {
            Arc::clone(
                self.in_flight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry((cluster.to_string(), shape.key()))
                    .or_default(),
            )
        });
        let (turn, waited) = match &gate {
            Some(gate) => match Arc::clone(gate).try_lock_owned() {
                Ok(turn) => (Some(turn), false),
                Err(_) => {
                    drop(Arc::clone(gate).lock_owned().await);
                    (None, true)
                }
            },
            None => (None, false),
        };
        if waited {
            // Another caller was asking: its answer, or its failure, is this caller's too (waiters do not ask
            // again one after another, each waiting out the timeout).
            self.release(gate, cluster, shape);
            return match self.answers.lookup(cluster, shape, Instant::now()) {
                Lookup::Fresh(kept) | Lookup::Stale(kept) => Some(kept),
                Lookup::Missing => None,
            };
        }
        // Answered between the look at the cache and this turn.
        if turn.is_some()
            && let Some(kept) = self.answers.get(cluster, shape, Instant::now())
        {
            drop(turn);
            self.release(gate, cluster, shape);
            return Some(kept);
        }
        let answer = self.max_available_replicas(cluster, requirements).await;
        drop(turn);
        self.release(gate, cluster, shape);
        match answer {
            Ok(answer) if answer != UNAUTHENTIC_REPLICA => {
                self.answers
                    .put(cluster, shape, i64::from(answer), Instant::now());
                Some(i64::from(answer))
            }
            // Karmada's -1 or no answer: the cluster gets the general estimate alone, so what was kept from
            // an earlier answer goes (a failed refresh does not keep serving it).
            Ok(_) => {
                self.answers.forget(cluster, shape);
                None
            }
            Err(err) => {
                tracing::debug!(%err, "no accurate estimate");
                self.answers.forget(cluster, shape);
                None
            }
        }
    }

    /// Refreshes the stale answers of `clusters` in the background, each unless a refresh of it is under way.
    fn refresh(
        self: &Arc<Self>,
        clusters: &[&str],
        shape: &Shape,
        requirements: Option<&ReplicaRequirements>,
    ) {
        if clusters.is_empty() {
            return;
        }
        let mut refreshes = self
            .refreshes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (tasks, running) = &mut *refreshes;
        while tasks.try_join_next().is_some() {}
        for cluster in clusters {
            let key = (cluster.to_string(), shape.key());
            if !running.insert(key.clone()) {
                continue;
            }
            let clients = Arc::clone(self);
            let requirements = requirements.cloned();
            let shape = shape.clone();
            tasks.spawn(async move {
                clients.fetch(&key.0, &shape, requirements.as_ref()).await;
                clients
                    .refreshes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .1
                    .remove(&key);
            });
        }
    }

    /// Forgets the in-flight gate of `(cluster, shape)` once nobody else holds it.
    fn release(&self, gate: Option<Arc<tokio::sync::Mutex<()>>>, cluster: &str, shape: &Shape) {
        let Some(gate) = gate else { return };
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The map's reference and this one: no caller waits.
        if Arc::strong_count(&gate) <= 2 {
            in_flight.remove(&(cluster.to_string(), shape.key()));
        }
    }

    /// The scheduler placed `delta` more replicas with `requirements` on `cluster` (negative: took some away), so
    /// kept answers follow ([`AnswerCache::assume`]).
    pub fn assume(&self, cluster: &str, requirements: Option<&ReplicaRequirements>, delta: i64) {
        self.answers
            .assume(cluster, &Shape::of(requirements), delta);
    }

    /// One cluster's `GetUnschedulableReplicas` answer for `resource`.
    pub async fn unschedulable_replicas(
        &self,
        cluster: &str,
        resource: &karmada_api::work::ObjectReference,
        threshold: Duration,
    ) -> Result<i32, EstimatorError> {
        let mut client = self.client(cluster).await?;
        let mut request = tonic::Request::new(UnschedulableReplicasRequest {
            cluster: cluster.to_string(),
            resource: Some(ObjectReference {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
                namespace: resource.namespace.clone(),
                name: resource.name.clone(),
            }),
            unschedulable_threshold: i64::try_from(threshold.as_nanos()).unwrap_or(i64::MAX),
        });
        request.set_timeout(self.config.timeout);
        let call = tokio::time::timeout(
            self.config.timeout,
            client.get_unschedulable_replicas(request),
        );
        self.settle(cluster, call.await)
            .map(|response| response.unschedulable_replicas)
    }
}

/// The address an estimator Service points at: ExternalName services only (as Karmada), through the port whose
/// `port` is `port`, to its numeric target port.
pub fn service_address(service: &Service, port: u16) -> Result<String, String> {
    let spec = service.spec.as_ref().ok_or("the Service has no spec")?;
    let kind = spec.type_.as_deref().unwrap_or("ClusterIP");
    if kind != "ExternalName" {
        return Err(format!(
            "unsupported service type {kind:?}; estimator Services are ExternalName"
        ));
    }
    let host = spec
        .external_name
        .as_deref()
        .filter(|h| !h.is_empty())
        .ok_or("the Service has no externalName")?;
    let entry = spec
        .ports
        .iter()
        .flatten()
        .find(|p| p.port == i32::from(port))
        .ok_or_else(|| format!("no service port {port} found"))?;
    let target = match &entry.target_port {
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(target)) => *target,
        None => entry.port,
        Some(other) => {
            return Err(format!(
                "ExternalName service should have an int target port, got {other:?}"
            ));
        }
    };
    Ok(format!("{host}:{target}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_name_services_give_the_target_port() {
        let service =
            |json: serde_json::Value| -> Service { serde_json::from_value(json).expect("service") };
        let good = service(
            serde_json::json!({"spec": {"type": "ExternalName", "externalName": "127.0.0.1",
            "ports": [{"port": 10352, "targetPort": 41000}]}}),
        );
        assert_eq!(
            service_address(&good, 10352).as_deref(),
            Ok("127.0.0.1:41000")
        );
        let cluster_ip = service(serde_json::json!({"spec": {"ports": [{"port": 10352}]}}));
        assert!(
            service_address(&cluster_ip, 10352)
                .expect_err("ClusterIP")
                .contains("unsupported service type")
        );
        assert!(
            service_address(&good, 9999)
                .expect_err("port")
                .contains("no service port 9999")
        );
    }
}
