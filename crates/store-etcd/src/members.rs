//! Endpoint failover. etcd-client's balanced channel fails a request routed to a dead member
//! instead of trying another (etcdv3/etcd-client#39), so this keeps one client per endpoint,
//! sends every call to the last one that worked, and moves on to the next when that member is
//! unreachable.
//!
//! Invariant: a call is re-sent to another member only when it provably never reached the
//! first one (the connection could not be made) or when it is safe to apply twice (reads,
//! compaction, watch creation). A write interrupted mid-flight is reported, not repeated,
//! because etcd may have applied it.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use etcd_client::{Client, ConnectOptions};

/// Whether a call may be sent again after a failure whose outcome is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resend {
    /// Reads and other idempotent calls: retry on any unavailability.
    Always,
    /// Writes: retry only when the request was never sent.
    OnlyIfUnsent,
}

/// One client per endpoint and the index of the one to try first.
pub struct Members {
    clients: Vec<(String, Client)>,
    preferred: AtomicUsize,
}

impl Members {
    /// Builds the clients; connections are made lazily, on first use.
    pub async fn new(
        endpoints: &[String],
        options: &ConnectOptions,
    ) -> Result<Self, (String, etcd_client::Error)> {
        let mut clients = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let client = Client::connect([endpoint.as_str()], Some(options.clone()))
                .await
                .map_err(|e| (endpoint.clone(), e))?;
            clients.push((endpoint.clone(), client));
        }
        Ok(Members {
            clients,
            preferred: AtomicUsize::new(0),
        })
    }

    /// The client currently preferred.
    pub fn preferred(&self) -> &Client {
        let index = self.preferred.load(Ordering::Relaxed) % self.clients.len().max(1);
        &self.clients[index].1
    }

    /// Runs `op` on the preferred member, failing over to the others in turn.
    pub async fn call<T, F, Fut>(&self, resend: Resend, op: F) -> Result<T, etcd_client::Error>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let count = self.clients.len();
        let first = self.preferred.load(Ordering::Relaxed);
        let mut attempt = 0;
        loop {
            let index = (first + attempt) % count.max(1);
            let Some((endpoint, client)) = self.clients.get(index) else {
                return Err(etcd_client::Error::InvalidArgs(
                    "no etcd endpoints".to_string(),
                ));
            };
            match op(client.clone()).await {
                Ok(value) => {
                    if attempt > 0 {
                        self.preferred.store(index, Ordering::Relaxed);
                        tracing::info!(endpoint, "etcd: switched to this member");
                    }
                    return Ok(value);
                }
                Err(error) if attempt + 1 < count && may_resend(&error, resend) => {
                    tracing::warn!(endpoint, %error, "etcd member unavailable, trying the next");
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// Whether `error` means the member could not serve, and the call may go to another one.
fn may_resend(error: &etcd_client::Error, resend: Resend) -> bool {
    match error {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(status) => match status.code() {
            tonic::Code::Unavailable => never_sent(&status.to_string()) || resend == Resend::Always,
            // The connection closed under an in-flight call.
            tonic::Code::Cancelled => resend == Resend::Always,
            _ => false,
        },
        _ => false,
    }
}

/// A connection that could not be made carried no request.
fn never_sent(message: &str) -> bool {
    message.contains("tcp connect error") || message.contains("Connection refused")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connection_failures_count_as_unsent() {
        let cases = [
            ("status: Unavailable, message: \"tcp connect error\"", true),
            ("Connection refused (os error 111)", true),
            (
                "status: Unavailable, message: \"error reading a body from connection\"",
                false,
            ),
            ("etcdserver: leader changed", false),
        ];
        for (message, unsent) in cases {
            assert_eq!(never_sent(message), unsent, "{message}");
        }
    }
}
