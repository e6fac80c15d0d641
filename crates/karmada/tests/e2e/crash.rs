//! SIGKILL the API server during a write load; after restart every acknowledged write is
//! there, intact, and nothing torn is visible.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};

use crate::harness::Server;

/// A value whose integrity can be checked: the payload and its own length and sum.
fn payload(seq: usize) -> String {
    let body: String =
        std::iter::repeat_n((b'a' + (seq % 26) as u8) as char, 512 + seq % 300).collect();
    let sum: u64 = body.bytes().map(u64::from).sum();
    format!("{}:{}:{}", body.len(), sum, body)
}

fn intact(value: &str) -> bool {
    let mut parts = value.splitn(3, ':');
    let (Some(len), Some(sum), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    len.parse::<usize>().ok() == Some(body.len())
        && sum.parse::<u64>().ok() == Some(body.bytes().map(u64::from).sum())
}

async fn client(s: &Server) -> Client {
    let kc = kube::config::Kubeconfig::read_from(&s.kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let mut s = Server::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let acked: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let enough = 300;

    rt.block_on(async {
        let c = client(&s).await;
        let (reached_tx, reached_rx) = tokio::sync::oneshot::channel();
        let mut reached_tx = Some(reached_tx);
        let mut writers = tokio::task::JoinSet::new();
        for w in 0..4 {
            let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
            let acked = acked.clone();
            writers.spawn(async move {
                for i in 0.. {
                    let name = format!("crash-{w}-{i}");
                    let value = payload(w * 100_000 + i);
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(name.clone()),
                            ..Default::default()
                        },
                        data: Some([("v".to_string(), value.clone())].into()),
                        ..Default::default()
                    };
                    if api.create(&PostParams::default(), &cm).await.is_err() {
                        return; // the server died under us
                    }
                    acked.lock().unwrap().insert(name, value);
                }
            });
        }
        // Kill once enough writes are acknowledged, while the writers keep going.
        let watcher = acked.clone();
        tokio::spawn(async move {
            loop {
                if watcher.lock().unwrap().len() >= enough {
                    if let Some(tx) = reached_tx.take() {
                        let _ = tx.send(());
                    }
                    return;
                }
                tokio::task::yield_now().await;
            }
        });
        reached_rx.await.unwrap();
        s.kill_and_restart();
        while writers.join_next().await.is_some() {}
    });

    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= enough);
    rt.block_on(async {
        let api: Api<ConfigMap> = Api::namespaced(client(&s).await, "default");
        let stored: BTreeMap<String, String> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|cm| Some((cm.metadata.name?, cm.data?.get("v")?.clone())))
            .collect();
        for (name, value) in &acked {
            assert_eq!(
                stored.get(name),
                Some(value),
                "acknowledged write {name} survived intact"
            );
        }
        for (name, value) in &stored {
            assert!(intact(value), "no torn value: {name}");
        }
        // And the server keeps accepting writes with newer resourceVersions.
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("after-restart".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await.unwrap();
    });
}
