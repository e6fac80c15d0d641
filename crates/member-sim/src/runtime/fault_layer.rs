//! A tower layer that enacts the network-level faults on requests arriving over the socket:
//! `notready` fails `/readyz` and `/healthz`, `unreachable` holds every request unanswered,
//! `latency` delays answers, `error-rate` fails that share of API requests with a 500 Status.
//!
//! Per request it asks [`Faults::request_effect`] what to do, with the faults in force when the
//! request arrives. A held request is answered normally once `unreachable` is cleared (or with
//! 503 when the cluster stops), so `clear` restores service without a restart.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use apimachinery::ApiError;
use axum::body::Body;
use http::{HeaderValue, Request, Response, StatusCode, header};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tower::{Layer, Service, ServiceExt};

use crate::faults::{Faults, RequestEffect};
use crate::naming::{Randomness, SplitMix64};

/// Wraps a service with the faults published on a watch channel.
#[derive(Clone)]
pub struct FaultLayer {
    faults: watch::Receiver<Faults>,
    cancel: CancellationToken,
    rolls: Arc<AtomicU64>,
}

impl FaultLayer {
    /// `seed` varies the error-rate rolls between clusters.
    pub fn new(faults: watch::Receiver<Faults>, cancel: CancellationToken, seed: u64) -> Self {
        Self {
            faults,
            cancel,
            rolls: Arc::new(AtomicU64::new(seed)),
        }
    }
}

impl<S> Layer<S> for FaultLayer {
    type Service = FaultService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FaultService {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct FaultService<S> {
    inner: S,
    layer: FaultLayer,
}

impl FaultLayer {
    /// A uniform number in `[0, 1)`; lock-free, distinct per request.
    fn roll(&self) -> f64 {
        let state = self.rolls.fetch_add(1, Ordering::Relaxed);
        let bits = SplitMix64(state).next_u64() >> 11;
        bits as f64 / (1u64 << 53) as f64
    }
}

impl<S> Service<Request<Body>> for FaultService<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is checked on the clone that serves the request (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let effect = self
            .layer
            .faults
            .borrow()
            .request_effect(request.uri().path(), self.layer.roll());
        let inner = self.inner.clone();
        let layer = self.layer.clone();
        Box::pin(async move {
            let delay = |millis: u64| tokio::time::sleep(Duration::from_millis(millis));
            match effect {
                RequestEffect::Serve { delay_millis } => {
                    delay(delay_millis).await;
                    inner.oneshot(request).await
                }
                RequestEffect::FailHealthCheck { delay_millis } => {
                    delay(delay_millis).await;
                    Ok(text_response(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "[-]member-sim failed: the cluster is marked notready\nhealthz check failed\n",
                    ))
                }
                RequestEffect::Fail { delay_millis } => {
                    delay(delay_millis).await;
                    Ok(internal_error())
                }
                RequestEffect::Hang => {
                    let mut faults = layer.faults.clone();
                    let reachable = tokio::select! {
                        _ = layer.cancel.cancelled() => false,
                        reachable = faults.wait_for(|f| !f.unreachable) => reachable.is_ok(),
                    };
                    if reachable {
                        inner.oneshot(request).await
                    } else {
                        Ok(unavailable())
                    }
                }
            }
        })
    }
}

fn text_response(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn status_response(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let status = ApiError::new(code.as_u16(), reason, message).status();
    let mut response = Response::new(Body::from(status.to_json()));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn internal_error() -> Response<Body> {
    status_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "Internal error occurred: injected by member-sim error-rate fault",
    )
}

fn unavailable() -> Response<Body> {
    status_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "the member cluster is shutting down",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> tower::util::BoxCloneSyncService<Request<Body>, Response<Body>, Infallible> {
        tower::util::BoxCloneSyncService::new(tower::service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(text_response(StatusCode::OK, "ok"))
        }))
    }

    async fn call(
        service: &FaultService<
            tower::util::BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>,
        >,
        path: &str,
    ) -> StatusCode {
        let request = Request::builder()
            .uri(path)
            .body(Body::empty())
            .expect("request");
        service
            .clone()
            .oneshot(request)
            .await
            .expect("infallible")
            .status()
    }

    #[tokio::test]
    async fn each_fault_changes_what_a_request_gets() {
        let (sender, receiver) = watch::channel(Faults::default());
        let cancel = CancellationToken::new();
        let service = FaultLayer::new(receiver, cancel.clone(), 7).layer(echo());
        assert_eq!(call(&service, "/readyz").await, StatusCode::OK);

        sender.send_modify(|f| f.not_ready = true);
        assert_eq!(
            call(&service, "/readyz").await,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            call(&service, "/healthz").await,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(call(&service, "/api/v1/pods").await, StatusCode::OK);

        sender.send_modify(|f| {
            *f = Faults {
                error_rate: 1.0,
                ..Faults::default()
            }
        });
        assert_eq!(
            call(&service, "/api/v1/pods").await,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(call(&service, "/readyz").await, StatusCode::OK);

        sender.send_modify(|f| {
            *f = Faults {
                error_rate: 0.5,
                ..Faults::default()
            }
        });
        let mut failed = 0;
        for _ in 0..200 {
            if call(&service, "/api").await != StatusCode::OK {
                failed += 1;
            }
        }
        assert!(
            (50..150).contains(&failed),
            "{failed} of 200 failed at rate 0.5"
        );

        sender.send_modify(|f| {
            *f = Faults {
                unreachable: true,
                ..Faults::default()
            }
        });
        let held = tokio::spawn({
            let service = service.clone();
            async move { call(&service, "/version").await }
        });
        let early = tokio::time::timeout(Duration::from_millis(200), async {
            call(&service, "/version").await
        })
        .await;
        assert!(early.is_err(), "an unreachable cluster must not answer");
        sender.send_modify(|f| *f = Faults::default());
        let status = tokio::time::timeout(Duration::from_secs(5), held)
            .await
            .expect("answered after clear")
            .expect("task");
        assert_eq!(status, StatusCode::OK);
    }
}
