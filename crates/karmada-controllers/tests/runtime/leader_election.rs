//! Leader election on a Lease: one leader at a time, a graceful stop hands over at once, a crashed leader is
//! replaced after the lease duration, and the work intervals of the replicas never overlap.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use karmada_controllers::runtime::leader_election::{LeaderElectionConfig, run_leader_elected};
use tokio_util::sync::CancellationToken;

use crate::support::{ControlPlane, eventually};

type Log = Arc<Mutex<Vec<(String, Instant, Option<Instant>)>>>;

fn config(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_millis(1500),
        renew_deadline: Duration::from_millis(1000),
        retry_period: Duration::from_millis(100),
        ..LeaderElectionConfig::new("default", "test-singleton", identity.to_string())
    }
}

/// Starts a candidate whose work records when it starts and stops leading.
fn candidate(
    plane: &ControlPlane,
    identity: &str,
    log: &Log,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let log = log.clone();
    let identity = identity.to_string();
    let client = plane.client.clone();
    tokio::spawn(async move {
        let config = config(&identity);
        run_leader_elected(client, config, cancel, move |lost| {
            let log = log.clone();
            let identity = identity.clone();
            async move {
                let index = {
                    let mut log = log.lock().expect("log");
                    log.push((identity, Instant::now(), None));
                    log.len() - 1
                };
                lost.cancelled().await;
                log.lock().expect("log")[index].2 = Some(Instant::now());
            }
        })
        .await
    })
}

fn leaders(log: &Log) -> Vec<String> {
    log.lock()
        .expect("log")
        .iter()
        .map(|(who, _, _)| who.clone())
        .collect()
}

fn assert_no_overlap(log: &Log) {
    let log = log.lock().expect("log");
    for pair in log.windows(2) {
        let ended = pair[0].2.expect("the earlier leader stopped");
        assert!(
            ended <= pair[1].1,
            "{} still worked when {} started",
            pair[0].0,
            pair[1].0
        );
    }
}

#[tokio::test]
async fn one_leader_graceful_handover_and_crash_takeover() {
    let plane = ControlPlane::start().await;
    let log: Log = Arc::default();
    let stop_a = CancellationToken::new();
    let a = candidate(&plane, "a", &log, stop_a.clone());
    eventually("a leads", || async {
        (leaders(&log) == ["a"]).then_some(())
    })
    .await;
    let stop_b = CancellationToken::new();
    let b = candidate(&plane, "b", &log, stop_b.clone());
    // b campaigns for a while and does not take over a live leader.
    let watched = Instant::now();
    eventually("several lease renewals", || async {
        (watched.elapsed() > Duration::from_millis(2000)).then_some(())
    })
    .await;
    assert_eq!(leaders(&log), ["a"], "a live leader keeps the lease");

    // Graceful stop: a releases, b takes over well before the lease duration.
    let stopped = Instant::now();
    stop_a.cancel();
    a.await.expect("a stops");
    eventually("b leads", || async {
        (leaders(&log) == ["a", "b"]).then_some(())
    })
    .await;
    assert!(
        stopped.elapsed() < Duration::from_millis(1500),
        "released lease is taken at once"
    );

    // Crash: b's election loop is dropped (no release); c waits out the lease duration, then leads.
    let stop_c = CancellationToken::new();
    let c = candidate(&plane, "c", &log, stop_c.clone());
    b.abort();
    let crashed = Instant::now();
    eventually("c leads", || async {
        (leaders(&log) == ["a", "b", "c"]).then_some(())
    })
    .await;
    assert!(
        crashed.elapsed() >= Duration::from_millis(1000),
        "a crashed leader's lease is honoured until it expires"
    );
    // b's work was aborted with its loop; record its end as the abort time for the overlap check.
    {
        let mut entries = log.lock().expect("log");
        if entries[1].2.is_none() {
            entries[1].2 = Some(crashed);
        }
    }
    assert_no_overlap(&log);
    stop_b.cancel();
    stop_c.cancel();
    c.await.expect("c stops");
}
