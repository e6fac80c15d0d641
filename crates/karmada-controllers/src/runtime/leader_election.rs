//! Leader election on a coordination.k8s.io/v1 Lease, for components that must run once (controller-manager,
//! scheduler): several replicas start, one holds the Lease and runs the work, the others wait and take over when
//! the holder stops renewing.
//!
//! Safety: the leader stops its work when it has not renewed for `renew_deadline`, which is shorter than
//! `lease_duration`, the time others wait before taking an unrenewed Lease. Every write carries the read
//! resourceVersion, so two candidates never both win the same round. Clocks: each candidate measures the
//! holder's silence from when *it* saw the Lease change (like client-go), so no clock sync between machines is
//! assumed.

use std::future::Future;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio_util::sync::CancellationToken;

use super::ControllerError;

/// Timing and identity of an election.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    pub lease_namespace: String,
    pub lease_name: String,
    /// Unique per replica (host name + pid by default).
    pub identity: String,
    /// How long others wait after the last renewal before taking over (Kubernetes default 15 s).
    pub lease_duration: Duration,
    /// How long the leader keeps working without a successful renewal (default 10 s).
    pub renew_deadline: Duration,
    /// How often to renew or retry (default 2 s).
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    pub fn new(lease_namespace: &str, lease_name: &str, identity: String) -> Self {
        Self {
            lease_namespace: lease_namespace.to_string(),
            lease_name: lease_name.to_string(),
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// A default identity: host name and process id.
    pub fn default_identity() -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into());
        format!("{host}_{}", std::process::id())
    }
}

/// What a candidate observed of the Lease: its holder and when the candidate last saw its record change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub holder: Option<String>,
    pub record: String,
    pub seen_at: Instant,
}

/// Whether `identity` may write itself as holder now: the Lease is free, already ours, or its holder has been
/// silent for longer than `lease_duration` since we saw its record last change.
pub fn may_acquire(
    observed: &Observed,
    identity: &str,
    lease_duration: Duration,
    now: Instant,
) -> bool {
    match observed.holder.as_deref() {
        None | Some("") => true,
        Some(holder) if holder == identity => true,
        Some(_) => now.saturating_duration_since(observed.seen_at) >= lease_duration,
    }
}

/// Runs `work` while this replica leads; returns when `cancel` fires (releasing the Lease so a standby takes over
/// at once). `work` gets a token that is cancelled when leadership is lost; it must return soon after, and is
/// awaited before this replica campaigns again, so its work never overlaps another leader's.
pub async fn run_leader_elected<F, Fut>(
    client: kube::Client,
    config: LeaderElectionConfig,
    cancel: CancellationToken,
    work: F,
) where
    F: Fn(CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let api: Api<Lease> = Api::namespaced(client, &config.lease_namespace);
    let mut observed: Option<Observed> = None;
    loop {
        // Campaign.
        loop {
            match try_acquire_or_renew(&api, &config, &mut observed).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(err) => tracing::debug!(%err, lease = %config.lease_name, "leader election"),
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(config.retry_period) => {}
            }
        }
        tracing::info!(identity = %config.identity, lease = %config.lease_name, "became leader");
        let lost = cancel.child_token();
        let mut task = AbortOnDrop(tokio::spawn(work(lost.clone())));
        let mut last_renewal = Instant::now();
        // Lead: renew until the deadline passes without success, or we are told to stop.
        let stopping = loop {
            tokio::select! {
                () = cancel.cancelled() => break true,
                () = tokio::time::sleep(config.retry_period) => {}
            }
            match try_acquire_or_renew(&api, &config, &mut observed).await {
                Ok(true) => last_renewal = Instant::now(),
                Ok(false) => break false,
                Err(err) => tracing::warn!(%err, lease = %config.lease_name, "renewing the lease"),
            }
            if last_renewal.elapsed() >= config.renew_deadline {
                break false;
            }
        };
        lost.cancel();
        let _ = (&mut task.0).await;
        if stopping {
            release(&api, &config).await;
            return;
        }
        tracing::warn!(identity = %config.identity, lease = %config.lease_name, "lost leadership");
    }
}

/// The leader's work dies with the election loop (e.g. when its owner drops it), never outliving it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn now_micro() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// One round: read the Lease, and write ourselves as holder if we may. `Ok(true)` when we hold it afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    config: &LeaderElectionConfig,
    observed: &mut Option<Observed>,
) -> Result<bool, ControllerError> {
    let duration_seconds = i32::try_from(config.lease_duration.as_secs()).unwrap_or(i32::MAX);
    let Some(lease) = api.get_opt(&config.lease_name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.lease_name.clone()),
                namespace: Some(config.lease_namespace.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(duration_seconds),
                acquire_time: Some(now_micro()),
                renew_time: Some(now_micro()),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(err) => Err(err.into()),
        };
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let record = format!(
        "{}|{:?}|{}",
        spec.holder_identity.clone().unwrap_or_default(),
        spec.renew_time.as_ref().map(|t| t.0),
        lease.metadata.resource_version.clone().unwrap_or_default()
    );
    let now = Instant::now();
    let changed = observed.as_ref().is_none_or(|o| o.record != record);
    if changed {
        *observed = Some(Observed {
            holder: spec.holder_identity.clone(),
            record,
            seen_at: now,
        });
    }
    let Some(current) = observed.as_ref() else {
        return Ok(false);
    };
    if !may_acquire(current, &config.identity, config.lease_duration, now) {
        return Ok(false);
    }
    let ours = spec.holder_identity.as_deref() == Some(config.identity.as_str());
    let mut updated = lease.clone();
    updated.spec = Some(LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(duration_seconds),
        acquire_time: if ours {
            spec.acquire_time.clone()
        } else {
            Some(now_micro())
        },
        renew_time: Some(now_micro()),
        lease_transitions: Some(spec.lease_transitions.unwrap_or(0) + if ours { 0 } else { 1 }),
        ..spec
    });
    // The resourceVersion read above is the precondition: a concurrent writer makes this a 409.
    match api
        .replace(&config.lease_name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Gives the Lease up so a standby does not wait out the lease duration.
async fn release(api: &Api<Lease>, config: &LeaderElectionConfig) {
    let Ok(Some(mut lease)) = api.get_opt(&config.lease_name).await else {
        return;
    };
    let Some(spec) = lease.spec.as_mut() else {
        return;
    };
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return;
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now_micro());
    if let Err(err) = api
        .replace(&config.lease_name, &PostParams::default(), &lease)
        .await
    {
        tracing::debug!(%err, "releasing the lease");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(holder: Option<&str>, seen_at: Instant) -> Observed {
        Observed {
            holder: holder.map(str::to_string),
            record: String::new(),
            seen_at,
        }
    }

    #[test]
    fn who_may_take_the_lease() {
        let start = Instant::now();
        let duration = Duration::from_secs(15);
        let cases = [
            (None, 0, true, "free lease"),
            (Some(""), 0, true, "released lease"),
            (Some("me"), 0, true, "our own lease is renewed"),
            (Some("other"), 0, false, "a fresh holder keeps it"),
            (Some("other"), 14, false, "still within the duration"),
            (Some("other"), 15, true, "silent for the whole duration"),
            (Some("other"), 60, true, "long gone"),
        ];
        for (holder, elapsed, expected, why) in cases {
            let got = may_acquire(
                &observed(holder, start),
                "me",
                duration,
                start + Duration::from_secs(elapsed),
            );
            assert_eq!(got, expected, "{why}");
        }
    }
}
