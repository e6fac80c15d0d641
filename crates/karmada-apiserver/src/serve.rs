//! The network front of the API server: accept loop, TLS, per-request authentication, and
//! graceful shutdown around an axum [`Router`].
//!
//! Each connection speaks HTTP/1.1 or HTTP/2 (ALPN over TLS, preface sniffing in plain mode).
//! Over TLS the client certificate (already verified against the cluster CA by rustls) is read
//! once per connection; every request is then authenticated (certificate, then bearer token,
//! then anonymous) and its [`UserInfo`] inserted into the request extensions before the router
//! sees it. Bad credentials get a 401 Status here; authorization is the router's job.
//!
//! Plain HTTP (`tls: None`) is an explicit test mode: every request is `UserInfo::admin()`.
//!
//! Ownership: connection tasks live in a `JoinSet` and HTTP/2 stream tasks in a `TaskTracker`,
//! both owned by [`serve`]. On cancellation the listener closes at once, open connections are
//! asked to finish gracefully, and whatever is still running after [`SHUTDOWN_GRACE`] (typically
//! long-lived watches) is aborted. Responses are streamed, never buffered.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::ApiError;
use apiserver_auth::UserInfo;
use apiserver_auth::authn::{Authenticator, PeerIdentity};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long in-flight requests may run after shutdown starts, by default.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// A client that has not finished the TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP/1 request headers must arrive within this time.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Concurrent HTTP/2 streams one client may open (kube-apiserver's default): a controller-manager multiplexes
/// every watch and in-flight request over one connection, so hyper's 200 would leave little room in a burst.
const MAX_STREAMS_PER_CONNECTION: u32 = 1000;
/// Pause after a transient accept failure (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("accepting connections: {0}")]
    Accept(#[source] std::io::Error),
}

/// How requests on a connection get their user.
#[derive(Clone)]
enum Identity {
    /// Plain-HTTP test mode: everyone is the administrator.
    Admin,
    /// TLS: authenticate each request; `peer` is the user of the verified client certificate, if any.
    Authenticate {
        authn: Arc<Authenticator>,
        peer: Option<Arc<PeerIdentity>>,
    },
}

/// Runs `h2` stream tasks on the server's tracker, so none outlives the server unobserved.
#[derive(Clone)]
struct TrackedExecutor(TaskTracker);

impl<F> hyper::rt::Executor<F> for TrackedExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        self.0.spawn(future);
    }
}

/// Tunables of [`serve_with_options`].
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// How long in-flight requests may run after shutdown starts.
    pub shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

/// Serves `router` on `listener` until `cancel` fires, then shuts down gracefully.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    authn: Arc<Authenticator>,
    router: Router,
    cancel: CancellationToken,
) -> Result<(), ServeError> {
    serve_with_options(
        listener,
        tls,
        authn,
        router,
        cancel,
        ServeOptions::default(),
    )
    .await
}

/// [`serve`] with explicit tunables.
pub async fn serve_with_options(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    authn: Arc<Authenticator>,
    router: Router,
    cancel: CancellationToken,
    options: ServeOptions,
) -> Result<(), ServeError> {
    let acceptor = tls.map(TlsAcceptor::from);
    // Connections stop on `cancel`, or on this child alone when the listener fails (the caller's
    // token is not ours to cancel).
    let stop_connections = cancel.child_token();
    let streams = TaskTracker::new();
    let mut connections = JoinSet::new();
    let outcome = loop {
        tokio::select! {
            _ = cancel.cancelled() => break Ok(()),
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let connection = Connection {
                        acceptor: acceptor.clone(),
                        authn: authn.clone(),
                        router: router.clone(),
                        peer,
                        executor: TrackedExecutor(streams.clone()),
                        cancel: stop_connections.clone(),
                    };
                    connections.spawn(connection.run(stream));
                }
                Err(e) if is_transient(&e) => {
                    tracing::warn!(error = %e, "accept failed; backing off");
                    tokio::select! {
                        _ = cancel.cancelled() => break Ok(()),
                        _ = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                    }
                }
                Err(e) => break Err(ServeError::Accept(e)),
            },
        }
    };
    drop(listener);
    stop_connections.cancel();
    streams.close();
    let drain = async {
        while connections.join_next().await.is_some() {}
        streams.wait().await;
    };
    if tokio::time::timeout(options.shutdown_grace, drain)
        .await
        .is_err()
    {
        tracing::info!(
            connections = connections.len(),
            "shutdown grace period over; closing remaining connections"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
    outcome
}

/// Errors worth retrying: the listener itself is fine.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock | OutOfMemory
    ) || matches!(e.raw_os_error(), Some(23 | 24 | 105)) // ENFILE, EMFILE, ENOBUFS
}

struct Connection {
    acceptor: Option<TlsAcceptor>,
    authn: Arc<Authenticator>,
    router: Router,
    peer: SocketAddr,
    executor: TrackedExecutor,
    cancel: CancellationToken,
}

impl Connection {
    async fn run(self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let Some(acceptor) = self.acceptor.clone() else {
            return self.serve_http(stream, Identity::Admin).await;
        };
        let handshake = tokio::select! {
            _ = self.cancel.cancelled() => return,
            handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => handshake,
        };
        let stream = match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!(peer = %self.peer, error = %e, "tls handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(peer = %self.peer, "tls handshake timed out");
                return;
            }
        };
        let peer = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|leaf| Arc::new(PeerIdentity::from_der(leaf.as_ref())));
        let identity = Identity::Authenticate {
            authn: self.authn.clone(),
            peer,
        };
        self.serve_http(stream, identity).await;
    }

    async fn serve_http<S>(self, stream: S, identity: Identity)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let router = self.router;
        let peer = self.peer;
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            handle(request, router.clone(), identity.clone(), peer)
        });
        let mut builder = auto::Builder::new(self.executor);
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            _ = self.cancel.cancelled() => {
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(e) = result {
            tracing::debug!(peer = %peer, error = %e, "connection ended with an error");
        }
    }
}

async fn handle(
    request: Request<Incoming>,
    router: Router,
    identity: Identity,
    peer: SocketAddr,
) -> Result<Response<Body>, Infallible> {
    let mut request = request.map(Body::new);
    let user = match identity {
        Identity::Admin => UserInfo::admin(),
        Identity::Authenticate {
            authn,
            peer: identity,
        } => {
            match authn
                .authenticate(request.headers(), identity.as_deref())
                .await
            {
                Ok(Some(user)) => user,
                Ok(None) => return Ok(unauthorized()),
                Err(e) => {
                    tracing::debug!(peer = %peer, error = %e, "authentication failed");
                    return Ok(unauthorized());
                }
            }
        }
    };
    request.extensions_mut().insert(user);
    request.extensions_mut().insert(ConnectInfo(peer));
    router.oneshot(request).await
}

/// kube-apiserver's 401 answer.
fn unauthorized() -> Response<Body> {
    let status = ApiError::unauthorized().status();
    let mut response = Response::new(Body::from(status.to_json()));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
