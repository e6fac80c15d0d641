//! Test harness: a simulated cluster driven through time.
#![allow(dead_code)]

pub mod live;

use jiff::{SignedDuration, Timestamp};
use member_sim::config::SimConfig;
use member_sim::faults::Faults;
use member_sim::naming::SplitMix64;
use member_sim::objects::{ObjectKey, Objects, Write};
use member_sim::{meta, nodes, sim};
use serde_json::{Value, json};

pub fn t0() -> Timestamp {
    "2026-11-29T12:00:00Z".parse().expect("valid timestamp")
}

pub struct Sim {
    pub objects: Objects,
    pub config: SimConfig,
    pub faults: Faults,
    pub now: Timestamp,
    pub rng: SplitMix64,
}

impl Sim {
    pub fn new(config: SimConfig) -> Self {
        let now = t0();
        let mut objects = Objects::new();
        for object in nodes::initial_objects(&config, now).expect("valid config") {
            objects.apply(&Write::Create(object), now).expect("fresh");
        }
        Sim {
            objects,
            config,
            faults: Faults::default(),
            now,
            rng: SplitMix64(42),
        }
    }

    pub fn with_nodes(count: u32, cpu: &str, memory: &str) -> Self {
        Self::new(SimConfig {
            nodes: count,
            node_cpu: cpu.to_string(),
            node_memory: memory.to_string(),
            ..SimConfig::default()
        })
    }

    pub fn create(&mut self, object: Value) {
        self.objects
            .apply(&Write::Create(object), self.now)
            .expect("create");
    }

    /// Replaces the spec of an object (bumping its generation, as the API server does).
    pub fn update_spec(
        &mut self,
        kind: &str,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) {
        let mut object = self.get(kind, namespace, name).clone();
        change(&mut object);
        self.objects
            .apply(&Write::Update(object), self.now)
            .expect("update");
    }

    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> &Value {
        self.objects
            .get(&ObjectKey::new(kind, namespace, name))
            .unwrap_or_else(|| panic!("{kind} {namespace}/{name} missing"))
    }

    /// Settles at the current time.
    pub fn settle(&mut self) -> sim::Settled {
        sim::settle(
            &mut self.objects,
            &self.config,
            &self.faults,
            self.now,
            &mut self.rng,
            50,
        )
        .expect("settles")
    }

    /// Runs forward `seconds`, waking at every requested time, and ends at exactly now+seconds.
    pub fn advance(&mut self, seconds: i64) {
        let until = self.now + SignedDuration::from_secs(seconds);
        sim::run_until(
            &mut self.objects,
            &self.config,
            &self.faults,
            self.now,
            until,
            &mut self.rng,
        )
        .expect("runs");
        self.now = until;
        self.settle();
    }

    pub fn pods(&self) -> Vec<&Value> {
        self.objects.list("Pod").collect()
    }

    pub fn pods_with_label(&self, key: &str, value: &str) -> Vec<&Value> {
        self.objects
            .list("Pod")
            .filter(|p| meta::labels(p).get(key).and_then(Value::as_str) == Some(value))
            .collect()
    }
}

pub fn container(cpu: &str, memory: &str) -> Value {
    json!({"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": cpu, "memory": memory}}})
}

pub fn deployment(name: &str, replicas: i64, cpu: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container(cpu, "64Mi")]},
            },
        },
    })
}

pub fn pod(name: &str, cpu: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [container(cpu, "64Mi")]},
    })
}

pub fn condition<'a>(object: &'a Value, type_: &str) -> &'a Value {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {object}"))
}
