//! The API server's shared state: the store, the served kinds, the authorizer, options and
//! metrics, plus the background controllers it owns.
//!
//! Ownership of background work: [`ApiServer::new`] starts the garbage collector ([`crate::gc`])
//! and the namespace finalizer ([`crate::namespaces`]) on the current tokio runtime. Both stop
//! when [`ApiServerOptions::cancel`] is cancelled; [`ApiServer::shutdown`] cancels it and waits
//! for them. Invariants: the registry is an immutable snapshot swapped under a short lock (never
//! held across an await); every object in the store follows [`crate::storage`]'s layout.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::{ApiError, ResourceDef};
use apiserver_auth::{AlwaysAllow, Authorizer, UserInfo};
use parking_lot::RwLock;
use serde_json::{Value, json};
use store::Store;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::metrics::Metrics;
use crate::objects::Part;
use crate::registry::Registry;
use crate::storage;

/// What to do with a request that carries no authenticated user (no `UserInfo` extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anonymous {
    /// Treat it as the cluster administrator: in-process tests and explicit plain-HTTP test mode.
    Admin,
    /// Answer 401 Unauthorized.
    Reject,
}

/// How the server runs.
#[derive(Clone)]
pub struct ApiServerOptions {
    pub anonymous: Anonymous,
    /// Decides every request; the auth layer supplies an RBAC authorizer.
    pub authorizer: Arc<dyn Authorizer>,
    /// Cancelling this stops the background controllers.
    pub cancel: CancellationToken,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// `host:port` clients reach the server at, for legacy `/api` discovery.
    pub advertise_address: String,
    /// Extra kinds to serve besides the built-in and Karmada ones (tests, embedding).
    pub extra_defs: Vec<ResourceDef>,
    /// Objects created at start when absent (e.g. the default RBAC roles); existing ones are
    /// left as they are, so an operator's edits survive restarts.
    pub bootstrap_objects: Vec<Value>,
    /// The Kubernetes version `/version` reports (`vMAJOR.MINOR.PATCH...`); `None` reports the
    /// control plane's own version. Simulated member clusters set the version they pretend to run.
    pub kubernetes_version: Option<String>,
    /// Mints ServiceAccount tokens (the `serviceaccounts/token` subresource and token Secrets);
    /// `None` serves neither.
    pub service_account_tokens: Option<Arc<ServiceAccountTokens>>,
    /// Read-only kinds served from a provider, not the store (`metrics.k8s.io`).
    pub provided: Vec<Arc<dyn crate::provided::ProvidedResources>>,
    /// Serves `custom.metrics.k8s.io` pod metrics; `None` serves no such group.
    pub custom_metrics: Option<Arc<dyn crate::custom_metrics::CustomMetricsProvider>>,
    /// How long an Event lives after its last observation (kube-apiserver's `--event-ttl`);
    /// `None` keeps Events until deleted.
    pub event_ttl: Option<Duration>,
}

/// What minting ServiceAccount tokens needs: the signing key, and the CA a token Secret carries
/// as `ca.crt`.
#[derive(Debug)]
pub struct ServiceAccountTokens {
    pub issuer: Arc<apiserver_auth::service_account::TokenIssuer>,
    pub ca_pem: String,
}

impl Default for ApiServerOptions {
    fn default() -> Self {
        Self {
            anonymous: Anonymous::Admin,
            authorizer: Arc::new(AlwaysAllow),
            cancel: CancellationToken::new(),
            max_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            advertise_address: "127.0.0.1:6443".into(),
            extra_defs: Vec::new(),
            bootstrap_objects: Vec::new(),
            kubernetes_version: None,
            service_account_tokens: None,
            provided: Vec::new(),
            custom_metrics: None,
            event_ttl: Some(crate::event_ttl::DEFAULT_EVENT_TTL),
        }
    }
}

impl std::fmt::Debug for ApiServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServerOptions")
            .field("anonymous", &self.anonymous)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("bookmark_interval", &self.bookmark_interval)
            .field("advertise_address", &self.advertise_address)
            .field("event_ttl", &self.event_ttl)
            .finish_non_exhaustive()
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("bootstrapping the store: {0}")]
    Bootstrap(#[from] ApiError),
}

/// Namespaces every server has.
pub const SYSTEM_NAMESPACES: &[&str] = &[
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "karmada-system",
    "karmada-cluster",
];

/// The API server state shared by every request.
pub struct ApiServer {
    pub store: Arc<dyn Store>,
    registry: RwLock<Arc<Registry>>,
    pub authorizer: Arc<dyn Authorizer>,
    pub options: ApiServerOptions,
    pub metrics: Metrics,
    /// Watch event objects encoded once for every watcher (see [`crate::watch`]).
    pub(crate) encoded_objects: crate::watch::EncodedObjects,
    /// APIService routes and availability (see [`crate::aggregator`]).
    pub aggregator: crate::aggregator::Aggregator,
    tasks: TaskTracker,
}

impl ApiServer {
    /// Builds the server: serves the built-in, Karmada and stored CRD kinds, creates the system
    /// namespaces that are missing, and starts the background controllers (see the module docs).
    /// Must be called inside a tokio runtime.
    pub async fn new(
        store: Arc<dyn Store>,
        options: ApiServerOptions,
    ) -> Result<Arc<Self>, StartError> {
        let mut defs = apiserver_views::builtin::resource_defs();
        defs.extend(crate::hooks::karmada_defs());
        defs.extend(options.extra_defs.iter().cloned());
        defs.extend(options.provided.iter().flat_map(|p| p.defs()));
        let metrics = Metrics::new();
        let store: Arc<dyn Store> = Arc::new(crate::metered_store::MeteredStore::new(
            store,
            metrics.store(),
        ));
        let server = Arc::new(Self {
            store,
            registry: RwLock::new(Arc::new(Registry::new(defs))),
            authorizer: Arc::clone(&options.authorizer),
            options,
            metrics,
            encoded_objects: crate::watch::EncodedObjects::default(),
            aggregator: crate::aggregator::Aggregator::default(),
            tasks: TaskTracker::new(),
        });
        crate::crds::register_stored(&server).await?;
        // Collected, so the future holds no closure and can be spawned (`Send` for all lifetimes).
        let namespaces: Vec<Value> = SYSTEM_NAMESPACES
            .iter()
            .map(
                |name| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .collect();
        server.ensure_objects(namespaces).await?;
        server
            .ensure_objects(server.options.bootstrap_objects.clone())
            .await?;
        server.tasks.spawn(crate::gc::run(Arc::clone(&server)));
        server
            .tasks
            .spawn(crate::namespaces::run(Arc::clone(&server)));
        server
            .tasks
            .spawn(crate::tokens_controller::run(Arc::clone(&server)));
        server
            .tasks
            .spawn(crate::storage_objects::run(Arc::clone(&server)));
        server
            .tasks
            .spawn(crate::aggregator::availability::run(Arc::clone(&server)));
        if let Some(ttl) = server.options.event_ttl {
            server
                .tasks
                .spawn(crate::event_ttl::run(Arc::clone(&server), ttl));
        }
        server.tasks.close();
        Ok(server)
    }

    /// Stops the background controllers and waits for them to finish.
    pub async fn shutdown(&self) {
        self.options.cancel.cancel();
        self.tasks.wait().await;
    }

    /// The provider serving `def`, when it is not a stored kind.
    pub fn provider_of(
        &self,
        def: &ResourceDef,
    ) -> Option<&dyn crate::provided::ProvidedResources> {
        self.options
            .provided
            .iter()
            .find(|p| {
                p.defs().iter().any(|d| {
                    d.group == def.group && d.version == def.version && d.plural == def.plural
                })
            })
            .map(Arc::as_ref)
    }

    /// The current snapshot of served kinds.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read())
    }

    /// Replaces the served kinds (CRD registration).
    pub(crate) fn update_registry(&self, change: impl FnOnce(&Registry) -> Registry) {
        let mut guard = self.registry.write();
        let next = change(&guard);
        *guard = Arc::new(next);
    }

    /// The user a request without credentials is, per [`ApiServerOptions::anonymous`].
    pub fn default_user(&self) -> Option<UserInfo> {
        match self.options.anonymous {
            Anonymous::Admin => Some(UserInfo::admin()),
            Anonymous::Reject => None,
        }
    }

    /// Creates each object that does not exist yet, through the normal create path; a bootstrap ClusterRole that
    /// exists gains the rules this version adds (see `reconciled_cluster_role`).
    async fn ensure_objects(
        &self,
        objects: impl IntoIterator<Item = Value>,
    ) -> Result<(), ApiError> {
        let registry = self.registry();
        for object in objects {
            let api_version = object["apiVersion"].as_str().unwrap_or_default();
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let kind = object["kind"].as_str().unwrap_or_default();
            let Some(def) = registry.lookup_kind(group, version, kind) else {
                return Err(ApiError::internal(format!(
                    "bootstrap object of unserved kind {api_version}/{kind}"
                )));
            };
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
            let key = storage::object_key(&def, namespace.as_deref(), &name);
            if let Some(kv) = self.store.get(&key).await.map_err(storage::store_error)? {
                let stored = storage::decode(&def, &kv)?;
                if let Some(updated) =
                    apiserver_auth::rbac::bootstrap::reconciled_cluster_role(&stored, &object)
                {
                    let options = crate::handlers::WriteOptions::internal("karmada-apiserver");
                    let written = crate::handlers::update::update_object(
                        self,
                        &def,
                        namespace.as_deref(),
                        &name,
                        updated,
                        Part::Main,
                        &options,
                    )
                    .await;
                    match written {
                        // Another API server starting beside this one reconciled it first.
                        Err(err) if err.reason == "Conflict" => {}
                        Err(err) => return Err(err),
                        Ok(_) => {}
                    }
                }
                continue;
            }
            let options = crate::handlers::WriteOptions::internal("karmada-apiserver");
            match crate::handlers::create::create_object(
                self,
                &def,
                namespace.as_deref(),
                object,
                &options,
            )
            .await
            {
                Ok(_) => {}
                Err(err) if err.reason == "AlreadyExists" => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Reads one object, if present.
    pub async fn read_object(
        &self,
        def: &ResourceDef,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<(Value, u64)>, ApiError> {
        let key = storage::object_key(def, namespace, name);
        match self.store.get(&key).await.map_err(storage::store_error)? {
            Some(kv) => Ok(Some((storage::decode(def, &kv)?, kv.mod_revision))),
            None => Ok(None),
        }
    }
}
