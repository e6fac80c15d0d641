//! API clients for long-running components: kube's default stack over HTTP/2 where the server offers it.
//!
//! kube's default client speaks HTTP/1.1 only, so every watch holds a connection of its own and every concurrent
//! request opens another. Each connection holds TLS and HTTP buffers (about 80–100 KiB measured) here and its
//! twin in the API server. In the propagation benchmark the controller-manager kept about 62 connections to the
//! API server (one per watch) and a burst of 1,000 workloads took the API server from 71 to 257 connections and
//! 15 MiB more RSS, with a TLS handshake for each new one. Like client-go, [`client`] offers `h2` in ALPN and,
//! when the server takes it, multiplexes every request and watch as streams of one connection. Member and agent
//! clients ([`http1_client`]) stay on HTTP/1.1.
//!
//! HTTP/2 shares one connection-level flow-control window between streams. A watch whose consumer applies
//! backpressure (a bounded subscriber queue) leaves its data unread, and that data holds connection window; if
//! the stalled streams held all of it, a response the stalled consumer waits for could not arrive. So the
//! connection window is the protocol's maximum, and each stream's own window (see [`STREAM_WINDOW`]) is what
//! bounds the data buffered for it — as the kernel's socket buffer bounded an HTTP/1.1 watch before. Pings every
//! [`KEEP_ALIVE`] find a dead connection (and keep the read timeout from firing on a quiet one), as client-go's
//! HTTP/2 health check does.
//!
//! Over HTTP/1.1 (the server's ALPN lacks `h2`, or [`http1_client`]), the pool below applies: at most
//! [`IDLE_PER_HOST`] idle connections stay per host, and an idle one closes after [`IDLE_TIMEOUT`]. A smaller pool
//! (16) closed and reopened connections within a burst, and the TLS handshakes cost the API server about a fifth
//! more CPU while a failed member's workloads moved.
//!
//! Every request is counted and timed as client-go's REST client metrics ([`super::client_metrics`]).
//!
//! Requests carry the `User-Agent` of the component that runs them once [`name_component`] was called, as
//! client-go names a binary's requests (`karmada-scheduler/v0.1.0 (linux/amd64) karmada-rs`): an API server
//! records a write's default field manager as the part before the first `/`, so `managedFields`, server-side
//! apply conflicts and request logs name the component. Without it every write was recorded as `unknown`.
//!
//! The config's read timeout bounds the wait for each response's head (a watch's head comes at once, its body
//! streams on); the socket's own read timeout is [`SILENT_CONNECTION_TIMEOUT`], so pooled connections and quiet
//! watches live on (see there).
//!
//! Otherwise the stack is kube's own: connect and write timeouts, the base URI, retry of 429/503/504 when the
//! config asks for it, authentication (tokens, exec plugins), impersonation headers.

use std::sync::OnceLock;
use std::time::Duration;

use http::HeaderValue;
use http::header::USER_AGENT;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::retry::RetryPolicy;
use kube::client::{ConfigExt, RustlsTlsError};
use tower::ServiceBuilder;
use tower::retry::RetryLayer;
use tower::timeout::TimeoutLayer;

/// Idle HTTP/1.1 connections kept per host: enough for the controller-manager's workers in a burst to reuse them.
pub const IDLE_PER_HOST: usize = 32;

/// How long an idle connection is kept for reuse: Go's `http.Transport` default, as client-go has it. It must
/// outlast the gaps of periodic work, such as the cluster status controller's 10 s rounds, or each round pays
/// a TLS handshake per member.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How long a connection may stay silent before it is taken for dead: kube's default read timeout, longer than
/// a watch's server-side timeout (290 s) and than [`IDLE_TIMEOUT`]. A client's own read timeout (5 s for member
/// clients) bounds how long a request waits for its response instead. As a socket timeout it closed a member
/// connection pooled for longer than 5 s, and ended a member watch after 5 s without events: with 100 members
/// the controller-manager reconnected (a TLS handshake each) and re-watched about twice per member every 10 s.
pub const SILENT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(295);

/// Data an HTTP/2 stream may have in flight unread: a watch's backlog before the server waits for its reader.
pub const STREAM_WINDOW: u32 = 1024 * 1024;

/// HTTP/2's largest window (2^31 − 1): the connection never runs out of window while streams have their own.
const CONNECTION_WINDOW: u32 = (1 << 31) - 1;

/// Interval of HTTP/2 pings, and how long a ping may go unanswered before the connection is dropped.
pub const KEEP_ALIVE: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(15);

/// The `User-Agent` this process's clients send, once [`name_component`] set it.
static COMPONENT_USER_AGENT: OnceLock<HeaderValue> = OnceLock::new();

/// Names the component this process runs (`karmada-controller-manager`, ...) in the `User-Agent` of every
/// client built from then on. The first name given stays.
pub fn name_component(component: &str) {
    if let Some(agent) = user_agent(component) {
        let _ = COMPONENT_USER_AGENT.set(agent);
    }
}

/// `component/vVERSION (OS/ARCH) karmada-rs`, client-go's form; `None` for a name a header cannot carry.
pub fn user_agent(component: &str) -> Option<HeaderValue> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    HeaderValue::from_str(&format!(
        "{component}/v{} ({}/{arch}) karmada-rs",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS
    ))
    .ok()
}

/// `config` with `agent` as its `User-Agent`, unless it names one already.
pub fn with_user_agent(mut config: kube::Config, agent: Option<&HeaderValue>) -> kube::Config {
    if let Some(agent) = agent
        && !config.headers.iter().any(|(name, _)| name == USER_AGENT)
    {
        config.headers.push((USER_AGENT, agent.clone()));
    }
    config
}

/// A client for `config`: HTTP/2 when the server offers it, else HTTP/1.1 with a pool that gives connections
/// back after a burst. For the controller-manager and the scheduler, whose many watches and bursts of requests
/// all go to one API server.
pub fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    build(config, true)
}

/// A client for `config` speaking HTTP/1.1 only, with the same pool. For member clusters and the agent, whose
/// few watches per connection gain little from multiplexing: with HTTP/2 there too, the 10-member propagation
/// benchmark ran slower (Pull P99 1,101 ms; member-sims 11–24% more CPU per workload) in a run on a host slower
/// that day, so whether HTTP/2 or the host cost it is not yet separated; HTTP/1.1 stays until an A/B says.
pub fn http1_client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    build(config, false)
}

fn build(config: kube::Config, http2: bool) -> Result<kube::Client, kube::Error> {
    let config = with_user_agent(config, COMPONENT_USER_AGENT.get());
    let mut connector = TimeoutConnector::new(https_connector(&config, http2)?);
    connector.set_connect_timeout(config.connect_timeout);
    // The config's read timeout bounds the wait for a response (below), not the connection's silence: on the
    // socket it also ended every pooled connection and every watch quiet for that long.
    connector.set_read_timeout(
        config
            .read_timeout
            .map(|timeout| timeout.max(SILENT_CONNECTION_TIMEOUT)),
    );
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(IDLE_PER_HOST)
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .http2_initial_stream_window_size(STREAM_WINDOW)
            .http2_initial_connection_window_size(CONNECTION_WINDOW)
            .http2_keep_alive_interval(KEEP_ALIVE)
            .http2_keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .http2_keep_alive_while_idle(true)
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
        .layer(TimeoutLayer::new(
            config.read_timeout.unwrap_or(SILENT_CONNECTION_TIMEOUT),
        ))
        // Innermost, so each attempt of a retried request counts, with the host the base URI set.
        .layer(super::client_metrics::RestClientMetricsLayer::default())
        .service(http);
    Ok(kube::Client::new(service, config.default_namespace))
}

/// kube's HTTPS connector (its TLS settings, the config's server name), with `h2` offered in ALPN beside
/// `http/1.1` if `http2`; plain `http://` URLs still connect without TLS (and so with HTTP/1.1).
fn https_connector(
    config: &kube::Config,
    http2: bool,
) -> Result<HttpsConnector<HttpConnector>, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    // An HTTP/2 request is a HEADERS frame, then DATA, flushed apart; with Nagle's algorithm the second waits
    // for the server's delayed ACK (up to 40 ms on Linux). Go sets TCP_NODELAY on every connection too.
    http.set_nodelay(true);
    let mut builder = HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = name
            .clone()
            .try_into()
            .map_err(|e| kube::Error::RustlsTls(RustlsTlsError::InvalidServerName(e)))?;
        builder = builder.with_server_name_resolver(FixedServerNameResolver::new(name));
    }
    Ok(if http2 {
        builder.enable_all_versions().wrap_connector(http)
    } else {
        builder.enable_http1().wrap_connector(http)
    })
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

    /// An HTTP/1.1 server counting the connections it accepted: `/quick` answers at once, `/slow-body` sends its
    /// head at once and its body after [`SLOW_BODY`], `/never` never answers.
    async fn timing_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let service = service_fn(
                        |request: hyper::Request<hyper::body::Incoming>| async move {
                            let (frames, body) = tokio::sync::mpsc::channel::<
                                Result<hyper::body::Frame<Bytes>, std::convert::Infallible>,
                            >(1);
                            match request.uri().path() {
                                "/quick" => {
                                    let _ = frames
                                        .send(Ok(hyper::body::Frame::data(Bytes::from_static(
                                            b"{}",
                                        ))))
                                        .await;
                                }
                                "/slow-body" => {
                                    tokio::spawn(async move {
                                        tokio::time::sleep(SLOW_BODY).await;
                                        let _ = frames
                                            .send(Ok(hyper::body::Frame::data(Bytes::from_static(
                                                b"late",
                                            ))))
                                            .await;
                                    });
                                }
                                _ => std::future::pending::<()>().await,
                            }
                            let body = http_body_util::StreamBody::new(tokio_stream_of(body));
                            Ok::<_, hyper::Error>(hyper::Response::new(body))
                        },
                    );
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (url, accepted)
    }

    fn tokio_stream_of<T: Send + 'static>(
        mut receiver: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures::Stream<Item = T> {
        futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
    }

    /// The read timeout of the clients in the tests below.
    const SHORT: Duration = Duration::from_millis(300);
    /// Longer than [`SHORT`].
    const SLOW_BODY: Duration = Duration::from_millis(900);

    fn short_timeout_client(url: &str) -> kube::Client {
        let mut config = kube::Config::new(url.parse().unwrap());
        config.read_timeout = Some(SHORT);
        http1_client(config).unwrap()
    }

    async fn get(client: &kube::Client, path: &str) -> Result<String, kube::Error> {
        client
            .request_text(http::Request::get(path).body(Vec::new()).unwrap())
            .await
    }

    #[tokio::test]
    async fn a_pooled_connection_outlives_the_read_timeout() {
        let (url, accepted) = timing_server().await;
        let client = short_timeout_client(&url);
        assert_eq!(get(&client, "/quick").await.unwrap(), "{}");
        // Idle in the pool for longer than the read timeout: that is the case under test, not a wait for it.
        tokio::time::sleep(SHORT * 3).await;
        assert_eq!(get(&client, "/quick").await.unwrap(), "{}");
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "the second request reused the first one's connection"
        );
    }

    #[tokio::test]
    async fn a_body_slower_than_the_read_timeout_still_arrives() {
        let (url, _) = timing_server().await;
        let client = short_timeout_client(&url);
        assert_eq!(get(&client, "/slow-body").await.unwrap(), "late");
    }

    #[tokio::test]
    async fn a_response_that_never_comes_fails_after_the_read_timeout() {
        let (url, _) = timing_server().await;
        let client = short_timeout_client(&url);
        let started = std::time::Instant::now();
        let answer = get(&client, "/never").await;
        assert!(answer.is_err(), "{answer:?}");
        assert!(
            started.elapsed() < SILENT_CONNECTION_TIMEOUT / 10,
            "bounded by the read timeout, not the connection's: {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn an_idle_member_connection_outlives_the_cluster_status_period() {
        // Each member answers the status controller once per period: a pool that dropped its connection in
        // between would pay a TLS handshake per member per round.
        let period =
            crate::cluster::status_controller::StatusControllerConfig::default().update_frequency;
        assert!(
            IDLE_TIMEOUT >= period * 3,
            "idle connections close after {IDLE_TIMEOUT:?}, the status period is {period:?}"
        );
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

    /// A TLS server speaking HTTP/1.1 and HTTP/2 (ALPN as the API server's), answering `/warm` at once and
    /// anything else once `burst` requests are in at once; reports connections accepted and the HTTP versions
    /// requests came in.
    async fn tls_server(
        burst: usize,
        pki: &apiserver_auth::pki::Pki,
    ) -> (String, Arc<std::sync::Mutex<(usize, Vec<http::Version>)>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let acceptor =
            tokio_rustls::TlsAcceptor::from(apiserver_auth::tls::server_config(pki).unwrap());
        let seen = Arc::new(std::sync::Mutex::new((0usize, Vec::new())));
        let barrier = Arc::new(Barrier::new(burst));
        let record = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                record.lock().unwrap().0 += 1;
                let (acceptor, barrier, record) =
                    (acceptor.clone(), Arc::clone(&barrier), Arc::clone(&record));
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = service_fn(move |request: hyper::Request<_>| {
                        record.lock().unwrap().1.push(request.version());
                        let barrier =
                            (request.uri().path() != "/warm").then(|| Arc::clone(&barrier));
                        async move {
                            if let Some(barrier) = barrier {
                                barrier.wait().await;
                            }
                            Ok::<_, hyper::Error>(hyper::Response::new(Full::new(
                                Bytes::from_static(b"{}"),
                            )))
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (url, seen)
    }

    #[tokio::test]
    async fn a_burst_to_an_http2_server_shares_one_connection() {
        let dir = tempfile::tempdir().unwrap();
        let pki = apiserver_auth::pki::Pki::load_or_create(dir.path(), &[]).unwrap();
        let burst = IDLE_PER_HOST * 3;
        let (url, seen) = tls_server(burst, &pki).await;
        let mut config = kube::Config::new(url.parse().unwrap());
        config.root_cert = Some(vec![pki.ca_cert_der().to_vec()]);
        let client = client(config).unwrap();
        let get = |path: &'static str| {
            let client = client.clone();
            async move {
                let request = http::Request::get(path).body(Vec::new()).unwrap();
                client.request_text(request).await
            }
        };
        // A first request alone: the connection is up, and known to speak HTTP/2, before the burst.
        assert_eq!(get("/warm").await.unwrap(), "{}");
        let answers = futures::future::join_all((0..burst).map(|_| get("/healthz"))).await;
        for answer in answers {
            assert_eq!(answer.unwrap(), "{}");
        }
        let (connections, versions) = seen.lock().unwrap().clone();
        assert_eq!(versions.len(), burst + 1);
        assert!(
            versions.iter().all(|v| *v == http::Version::HTTP_2),
            "versions: {versions:?}"
        );
        assert_eq!(
            connections, 1,
            "{burst} concurrent requests, one connection"
        );
    }

    /// An HTTP/1.1 server that answers `{}` and reports the `User-Agent` of each request.
    async fn user_agent_server() -> (String, Arc<std::sync::Mutex<Vec<Option<String>>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let record = Arc::clone(&record);
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let agent = request
                                .headers()
                                .get(USER_AGENT)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string);
                            record.lock().unwrap().push(agent);
                            async move {
                                Ok::<_, hyper::Error>(hyper::Response::new(Full::new(
                                    Bytes::from_static(b"{}"),
                                )))
                            }
                        });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (url, seen)
    }

    #[tokio::test]
    async fn requests_name_the_component_unless_the_config_names_an_agent() {
        let (url, seen) = user_agent_server().await;
        let agent = user_agent("karmada-scheduler").expect("a header value");
        let expected = format!(
            "karmada-scheduler/v{} ({}/",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS
        );
        assert!(agent.to_str().unwrap().starts_with(&expected), "{agent:?}");
        assert!(user_agent("bad\nname").is_none());

        let named = with_user_agent(kube::Config::new(url.parse().unwrap()), Some(&agent));
        let mut own = kube::Config::new(url.parse().unwrap());
        own.headers
            .push((USER_AGENT, HeaderValue::from_static("my-tool/1.0")));
        let own = with_user_agent(own, Some(&agent));
        let unnamed = with_user_agent(kube::Config::new(url.parse().unwrap()), None);
        for config in [named, own, unnamed] {
            let client = http1_client(config).unwrap();
            let request = http::Request::get("/healthz").body(Vec::new()).unwrap();
            assert_eq!(client.request_text(request).await.unwrap(), "{}");
        }
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                Some(agent.to_str().unwrap().to_string()),
                Some("my-tool/1.0".to_string()),
                None
            ]
        );
    }

    #[tokio::test]
    async fn the_http1_client_keeps_to_http1_where_http2_is_offered() {
        let dir = tempfile::tempdir().unwrap();
        let pki = apiserver_auth::pki::Pki::load_or_create(dir.path(), &[]).unwrap();
        let (url, seen) = tls_server(1, &pki).await;
        let mut config = kube::Config::new(url.parse().unwrap());
        config.root_cert = Some(vec![pki.ca_cert_der().to_vec()]);
        let client = http1_client(config).unwrap();
        let request = http::Request::get("/healthz").body(Vec::new()).unwrap();
        assert_eq!(client.request_text(request).await.unwrap(), "{}");
        assert_eq!(seen.lock().unwrap().1, vec![http::Version::HTTP_11]);
    }
}
