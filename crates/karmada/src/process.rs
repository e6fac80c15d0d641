//! Process lifecycle shared by the long-running subcommands: when to stop.

/// Resolves when the process is asked to stop: SIGINT, SIGTERM, or (when asked for) the end of
/// standard input.
pub async fn shutdown_requested(with_stdin: bool) -> &'static str {
    use tokio::io::AsyncReadExt;
    let stdin_closed = async {
        if !with_stdin {
            return std::future::pending().await;
        }
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted",
        _ = terminate => "terminated",
        _ = stdin_closed => "standard input closed",
    }
}
