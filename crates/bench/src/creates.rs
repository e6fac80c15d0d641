//! How the benchmarks create their workloads: a burst from 32 clients, or paced at a rate with each create on its
//! own task (a slow answer does not hold back the next).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, PostParams};
use tokio::sync::Mutex;

/// What the benchmarks create: any kind the client can send and read back (typed Deployments, dynamic objects).
pub trait Workload:
    kube::Resource
    + Clone
    + std::fmt::Debug
    + serde::Serialize
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Workload for K where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// Creates `objects` as fast as 32 clients can.
pub async fn burst<K: Workload>(api: &Api<K>, objects: Vec<K>) -> anyhow::Result<()> {
    let queue = Arc::new(Mutex::new(objects));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let api = api.clone();
        let queue = queue.clone();
        tasks.spawn(async move {
            loop {
                let Some(object) = queue.lock().await.pop() else {
                    return anyhow::Ok(());
                };
                api.create(&PostParams::default(), &object).await?;
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    Ok(())
}

/// Creates `objects` at `rate` per second; returns when each create was acknowledged, by name.
pub async fn paced<K: Workload>(
    api: &Api<K>,
    objects: Vec<K>,
    rate: u32,
) -> anyhow::Result<HashMap<String, Instant>> {
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    let acked: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    for object in objects {
        ticker.tick().await;
        let api = api.clone();
        let acked = acked.clone();
        tasks.spawn(async move {
            let name = object.meta().name.clone().unwrap_or_default();
            api.create(&PostParams::default(), &object).await?;
            acked.lock().await.insert(name, Instant::now());
            anyhow::Ok(())
        });
    }
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    Ok(std::mem::take(&mut *acked.lock().await))
}
