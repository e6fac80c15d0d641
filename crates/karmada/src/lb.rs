//! `karmada lb`: the single endpoint in front of several API server replicas. An L4 TCP
//! pass-through (TLS ends at the API servers, which all hold the same serving certificate),
//! spreading connections round-robin over the backends and skipping, for a cool-down, any
//! backend that refused a connection.
//!
//! The choice of backend is the pure [`Balancer`]; the runtime only connects and copies bytes.
//! A connection already established stays on its backend until either side closes it (a
//! watch on a dead replica ends, and the client re-watches through the lb on a live one).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::process::shutdown_requested;

/// How long a backend that refused a connection is passed over.
const COOL_DOWN: Duration = Duration::from_secs(3);
/// Longest wait for one backend to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Args, Debug)]
pub struct LbArgs {
    /// Address to listen on, e.g. 127.0.0.1:32443.
    #[arg(long)]
    pub listen: String,
    /// A backend address (repeat the flag for each API server replica).
    #[arg(long = "backend", required = true)]
    pub backends: Vec<String>,
    /// Stop when standard input closes.
    #[arg(long)]
    pub exit_with_stdin: bool,
    /// The data directory of the control plane this lb fronts. Unused by the lb itself: it puts
    /// the directory in the command line, which is how karmadactl recognizes its processes.
    #[arg(long = "karmada-data")]
    pub karmada_data: Option<std::path::PathBuf>,
}

/// Which backend a new connection tries first, second, ...: the healthy ones in round-robin
/// order, then those cooling down (least recently failed first), so that a connection is
/// refused only when every backend refuses it.
#[derive(Debug)]
pub struct Balancer {
    /// For each backend, when its cool-down ends (None: healthy).
    down_until: Vec<Option<Instant>>,
    next: usize,
}

impl Balancer {
    pub fn new(backends: usize) -> Balancer {
        Balancer {
            down_until: vec![None; backends],
            next: 0,
        }
    }

    /// The order in which to try the backends for one new connection.
    pub fn order(&mut self, now: Instant) -> Vec<usize> {
        let count = self.down_until.len();
        if count == 0 {
            return Vec::new();
        }
        let start = self.next % count;
        self.next = (start + 1) % count;
        let rotation = (0..count).map(|i| (start + i) % count);
        let mut healthy = Vec::with_capacity(count);
        let mut cooling = Vec::new();
        for index in rotation {
            match self.down_until[index] {
                Some(until) if until > now => cooling.push((until, index)),
                _ => healthy.push(index),
            }
        }
        cooling.sort();
        healthy.extend(cooling.into_iter().map(|(_, index)| index));
        healthy
    }

    /// Backend `index` refused a connection at `now`.
    pub fn failed(&mut self, index: usize, now: Instant) {
        if let Some(slot) = self.down_until.get_mut(index) {
            *slot = Some(now + COOL_DOWN);
        }
    }

    /// Backend `index` accepted a connection.
    pub fn succeeded(&mut self, index: usize) {
        if let Some(slot) = self.down_until.get_mut(index) {
            *slot = None;
        }
    }
}

pub async fn run(args: LbArgs) -> anyhow::Result<()> {
    let backends: Vec<SocketAddr> = args
        .backends
        .iter()
        .map(|b| {
            b.parse()
                .with_context(|| format!("--backend {b}: expected HOST:PORT"))
        })
        .collect::<anyhow::Result<_>>()?;
    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("binding --listen {}", args.listen))?;
    tracing::info!(listen = %listener.local_addr()?, ?backends, "karmada lb listening");
    let cancel = CancellationToken::new();
    let tasks = TaskTracker::new();
    let balancer = std::sync::Arc::new(std::sync::Mutex::new(Balancer::new(backends.len())));
    let shutdown = shutdown_requested(args.exit_with_stdin);
    tokio::pin!(shutdown);
    loop {
        let (client, peer) = tokio::select! {
            reason = &mut shutdown => {
                tracing::info!(%reason, "shutting down");
                break;
            }
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    continue;
                }
            },
        };
        let order = match balancer.lock() {
            Ok(mut balancer) => balancer.order(Instant::now()),
            Err(_) => (0..backends.len()).collect(),
        };
        let backends = backends.clone();
        let balancer = balancer.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            let Some(upstream) = connect(&backends, &order, &balancer).await else {
                tracing::warn!(%peer, "no backend accepted the connection");
                return;
            };
            let mut client = client;
            let mut upstream = upstream;
            tokio::select! {
                () = cancel.cancelled() => {}
                _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
            }
        });
    }
    cancel.cancel();
    tasks.close();
    tasks.wait().await;
    Ok(())
}

/// Tries the backends in `order`; the first that accepts carries the connection.
async fn connect(
    backends: &[SocketAddr],
    order: &[usize],
    balancer: &std::sync::Mutex<Balancer>,
) -> Option<TcpStream> {
    for &index in order {
        let address = backends.get(index)?;
        let attempt = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await;
        match attempt {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                if let Ok(mut balancer) = balancer.lock() {
                    balancer.succeeded(index);
                }
                return Some(stream);
            }
            Ok(Err(error)) => tracing::warn!(%address, %error, "backend refused; trying the next"),
            Err(_) => tracing::warn!(%address, "backend did not answer; trying the next"),
        }
        if let Ok(mut balancer) = balancer.lock() {
            balancer.failed(index, Instant::now());
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn healthy_backends_take_turns() {
        let mut balancer = Balancer::new(3);
        let now = Instant::now();
        let firsts: Vec<usize> = (0..6).map(|_| balancer.order(now)[0]).collect();
        assert_eq!(firsts, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(balancer.order(now), vec![0, 1, 2]);
    }

    #[test]
    fn a_refusing_backend_is_skipped_until_its_cool_down_ends() {
        let mut balancer = Balancer::new(3);
        let now = Instant::now();
        balancer.failed(1, now);
        for _ in 0..6 {
            let order = balancer.order(now);
            assert_ne!(order[0], 1, "{order:?}");
            assert_eq!(order.last(), Some(&1), "tried last, not never: {order:?}");
            assert_eq!(order.len(), 3);
        }
        let later = now + COOL_DOWN + Duration::from_millis(1);
        let firsts: Vec<usize> = (0..3).map(|_| balancer.order(later)[0]).collect();
        assert!(firsts.contains(&1), "back in rotation: {firsts:?}");
    }

    #[test]
    fn when_all_refuse_the_least_recently_failed_goes_first() {
        let mut balancer = Balancer::new(2);
        let now = Instant::now();
        balancer.failed(1, now);
        balancer.failed(0, now + Duration::from_millis(10));
        assert_eq!(balancer.order(now + Duration::from_millis(20)), vec![1, 0]);
        balancer.succeeded(0);
        assert_eq!(balancer.order(now + Duration::from_millis(20))[0], 0);
        assert!(Balancer::new(0).order(now).is_empty());
    }
}
