//! The HTTPS server: TLS on each accepted connection, then HTTP/1.1 or HTTP/2 to the router. Connections
//! are tasks of this loop and end with it.

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::ControlPlane;
use crate::router::{App, router};
use crate::session::Sessions;

/// Serves the dashboard on `listener` until `cancel`.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    control_plane: ControlPlane,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    let app = Arc::new(App {
        control_plane,
        sessions: Sessions::default(),
        cancel: cancel.clone(),
    });
    let router = router(app);
    let acceptor = TlsAcceptor::from(tls);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => accepted?,
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        let cancel = cancel.clone();
        connections.spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::debug!(%peer, %error, "dashboard TLS handshake failed");
                    return;
                }
            };
            let builder = auto::Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = cancel.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%peer, %error, "dashboard connection ended with an error");
            }
        });
    }
    connections.shutdown().await;
    Ok(())
}
