//! API clients for long-running components: kube's default stack with a smaller idle pool.
//!
//! kube's default client keeps every connection a burst opened, idle, for 90 s. Each holds TLS and HTTP buffers
//! (about 100 KiB measured) here and its twin in the API server. In the propagation benchmark a burst of 1,000
//! workloads took the controller-manager from about 75 connections to about 200, and the scheduler from 10 to 60;
//! RSS after the burst kept all of them. Here at most [`IDLE_PER_HOST`] idle connections stay per host, and an
//! idle one closes after [`IDLE_TIMEOUT`]. A smaller pool (16) closed and reopened connections within a burst, and
//! the TLS handshakes cost the API server about a fifth more CPU while a failed member's workloads moved.
//!
//! Otherwise the stack is kube's own: connect/read/write timeouts, the base URI, retry of 429/503/504 when the
//! config asks for it, authentication (tokens, exec plugins), impersonation headers.

use std::time::Duration;

use hyper_timeout::TimeoutConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use tower::ServiceBuilder;
use tower::retry::RetryLayer;

/// Idle connections kept per host: enough for the controller-manager's workers in a burst to reuse them.
pub const IDLE_PER_HOST: usize = 32;

/// How long an idle connection is kept for reuse: past a burst, not through a steady stream's gaps.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// A client for `config` whose connection pool gives connections back after a burst.
pub fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    let mut connector = TimeoutConnector::new(config.rustls_https_connector()?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(IDLE_PER_HOST)
            .pool_idle_timeout(IDLE_TIMEOUT)
            .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        // kube's auth and retry layers speak boxed errors.
        .map_err(tower::BoxError::from)
        .service(http);
    Ok(kube::Client::new(service, config.default_namespace))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use tokio::sync::{Barrier, watch};

    use super::*;

    /// An HTTP server that answers `{}` once `burst` requests are in at once (so each needs its own connection),
    /// and reports how many connections are open.
    async fn server(burst: usize) -> (String, watch::Receiver<usize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (open_tx, open_rx) = watch::channel(0usize);
        let open_tx = Arc::new(open_tx);
        let barrier = Arc::new(Barrier::new(burst));
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let open = Arc::clone(&open_tx);
                let barrier = Arc::clone(&barrier);
                open.send_modify(|n| *n += 1);
                tokio::spawn(async move {
                    let service = service_fn(move |_request| {
                        let barrier = Arc::clone(&barrier);
                        async move {
                            barrier.wait().await;
                            Ok::<_, hyper::Error>(
                                hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from_static(b"{}")))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                    open.send_modify(|n| *n -= 1);
                });
            }
        });
        (url, open_rx)
    }

    #[tokio::test]
    async fn a_burst_leaves_at_most_the_idle_pool_open() {
        let burst = IDLE_PER_HOST * 3;
        let (url, mut open) = server(burst).await;
        let client = client(kube::Config::new(url.parse().unwrap())).unwrap();
        let requests = (0..burst).map(|_| {
            let client = client.clone();
            async move {
                let request = http::Request::get("/healthz").body(Vec::new()).unwrap();
                client.request_text(request).await
            }
        });
        for answer in futures::future::join_all(requests).await {
            assert_eq!(answer.unwrap(), "{}");
        }
        assert_eq!(
            *open.borrow(),
            burst,
            "the burst needed a connection per request"
        );
        // The client closes what its pool does not keep; the server then sees those connections end.
        let settled = tokio::time::timeout(
            Duration::from_secs(10),
            open.wait_for(|n| *n == IDLE_PER_HOST),
        )
        .await
        .is_ok();
        assert!(
            settled,
            "still {} connections open, expected {IDLE_PER_HOST}",
            *open.borrow()
        );
    }
}
