//! client-go's REST client metrics for every API client built here: a tower layer that counts each request by
//! status code, HTTP method and host (`rest_client_requests_total`) and times it until the response headers
//! (`rest_client_request_duration_seconds`; for a watch, until the stream opens). See [`super::metrics`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Layer, Service};

/// Records the requests passing through it in [`super::metrics::global`].
#[derive(Clone, Debug, Default)]
pub struct RestClientMetricsLayer {
    /// The `host` label for requests whose URI names none (a client riding the router in memory).
    fallback_host: Arc<str>,
}

impl RestClientMetricsLayer {
    /// Requests without a host in their URI are labelled `fallback_host`.
    pub fn new(fallback_host: &str) -> Self {
        Self {
            fallback_host: Arc::from(fallback_host),
        }
    }
}

impl<S> Layer<S> for RestClientMetricsLayer {
    type Service = RestClientMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestClientMetrics {
            inner,
            fallback_host: self.fallback_host.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct RestClientMetrics<S> {
    inner: S,
    fallback_host: Arc<str>,
}

impl<S, B, R> Service<http::Request<B>> for RestClientMetrics<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = request.method().clone();
        let host = match request.uri().authority() {
            Some(authority) => authority.as_str().to_string(),
            None => self.fallback_host.to_string(),
        };
        let started = tokio::time::Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            let code = response.as_ref().ok().map(|r| r.status().as_u16());
            super::metrics::global().observe_request(
                method.as_str(),
                &host,
                code,
                started.elapsed(),
            );
            response
        })
    }
}
