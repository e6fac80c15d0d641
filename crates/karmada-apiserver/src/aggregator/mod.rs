//! API aggregation, as kube-aggregator does it: an `apiregistration.k8s.io/v1` APIService with a
//! `spec.service` hands its group/version to that Service's endpoint. Requests under
//! `/apis/{group}/{version}` are forwarded over TLS (the Service's `caBundle`, or
//! `insecureSkipTLSVerify`) with the caller's identity in the front-proxy headers
//! (`X-Remote-User`, one `X-Remote-Group` per group) and without its credentials; while the
//! APIService is not Available they get a 503 Status naming its condition. The aggregated
//! resources join discovery from the endpoint's own discovery document. A `Local` APIService (no
//! service) names a group this server serves: it is listed and always Available.
//!
//! Shape: [`availability`] is the controller that checks each APIService, writes its `Available`
//! condition and publishes the [`Routes`]; [`proxy`] forwards a request along them; [`backend`]
//! resolves a Service to a URL and builds its client. The router calls [`intercept`] once, before
//! its own dispatch.

pub mod availability;
pub mod backend;
pub mod proxy;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use parking_lot::RwLock;

use crate::server::ApiServer;

pub const GROUP: &str = "apiregistration.k8s.io";
pub const VERSION: &str = "v1";
pub const PLURAL: &str = "apiservices";

/// Where an aggregated group/version goes.
#[derive(Clone)]
pub enum Route {
    Available {
        api_service: String,
        /// `https://host:port`, for messages.
        url: String,
        client: kube::Client,
    },
    Unavailable {
        api_service: String,
        reason: String,
        message: String,
    },
}

/// The routes in force, by (group, version); replaced whole by the availability controller.
#[derive(Default)]
pub struct Routes {
    current: RwLock<Arc<BTreeMap<(String, String), Route>>>,
}

impl Routes {
    pub fn get(&self, group: &str, version: &str) -> Option<Route> {
        self.current
            .read()
            .get(&(group.to_string(), version.to_string()))
            .cloned()
    }

    pub(crate) fn replace(&self, routes: BTreeMap<(String, String), Route>) {
        *self.current.write() = Arc::new(routes);
    }
}

/// The aggregation state a server holds: the routes in force and what the availability
/// controller remembers.
#[derive(Default)]
pub struct Aggregator {
    pub routes: Routes,
    pub(crate) checks: availability::State,
}

/// `/apis/{group}/{version}[/...]` → (group, version).
fn group_version(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some((group, version))
}

/// Answers `request` when it belongs to an aggregated group/version; hands it back otherwise.
pub async fn intercept(server: &Arc<ApiServer>, request: Request) -> Result<Response, Request> {
    let route = match group_version(request.uri().path()) {
        Some((group, version)) => server.aggregator.routes.get(group, version),
        None => None,
    };
    match route {
        Some(route) => Ok(proxy::serve(server, route, request).await),
        None => Err(request),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_paths_name_their_group_version() {
        let cases = [
            (
                "/apis/metrics.k8s.io/v1beta1/nodes",
                Some(("metrics.k8s.io", "v1beta1")),
            ),
            (
                "/apis/metrics.k8s.io/v1beta1",
                Some(("metrics.k8s.io", "v1beta1")),
            ),
            ("/apis/metrics.k8s.io", None),
            ("/apis", None),
            ("/api/v1/pods", None),
            ("/apis//v1", None),
        ];
        for (path, want) in cases {
            assert_eq!(group_version(path), want, "{path}");
        }
    }
}
