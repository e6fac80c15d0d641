//! The webhook layer: finds the webhook that claims an operation, asks it, and reads its answer.

use std::sync::Arc;

use karmada_api::config::{ResourceInterpreterWebhook, ResourceInterpreterWebhookConfiguration};
use karmada_api::work::AggregatedStatusItem;
use parking_lot::RwLock;
use serde_json::Value;

use super::context::{self, Ask, CONTEXT_VERSION};
use super::rules::matches;
use crate::{
    DependentObjectReference, InterpretError, Operation, ReplicaInfo, ResourceInterpreter, Target,
};

/// Delivers a context to a webhook and returns what it answered (the whole `ResourceInterpreterContext`).
/// Errors are messages naming what failed (connection, TLS, timeout, HTTP status).
pub trait WebhookCaller: Send + Sync {
    fn call(&self, webhook: &ResourceInterpreterWebhook, context: &Value) -> Result<Value, String>;
}

/// The webhook layer; [`Self::load`] sets the configurations in force.
pub struct WebhookInterpreter {
    caller: Arc<dyn WebhookCaller>,
    webhooks: RwLock<Arc<Vec<Arc<ResourceInterpreterWebhook>>>>,
}

impl WebhookInterpreter {
    pub fn new(caller: Arc<dyn WebhookCaller>) -> Self {
        Self {
            caller,
            webhooks: RwLock::default(),
        }
    }

    /// Makes `configurations` the set in force: by configuration name, then in listed order.
    pub fn load(&self, configurations: &[ResourceInterpreterWebhookConfiguration]) {
        let mut sorted: Vec<&ResourceInterpreterWebhookConfiguration> =
            configurations.iter().collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let webhooks = sorted
            .into_iter()
            .flat_map(|configuration| configuration.webhooks.iter().cloned().map(Arc::new))
            .collect();
        *self.webhooks.write() = Arc::new(webhooks);
    }

    /// Whether any webhook is configured.
    pub fn is_empty(&self) -> bool {
        self.webhooks.read().is_empty()
    }

    fn webhook(
        &self,
        target: &Target,
        operation: Operation,
    ) -> Option<Arc<ResourceInterpreterWebhook>> {
        self.webhooks
            .read()
            .iter()
            .find(|webhook| {
                webhook
                    .rules
                    .iter()
                    .any(|rule| matches(rule, target, operation))
            })
            .cloned()
    }

    /// Asks the webhook that claims the operation; returns its name and its checked answer.
    fn ask(&self, ask: &Ask<'_>) -> Result<(String, context::Answer), InterpretError> {
        let target = Target::of(ask.object)?;
        let Some(webhook) = self.webhook(&target, ask.operation) else {
            return Err(InterpretError::Unsupported {
                operation: ask.operation.to_string(),
                api_version: target.api_version,
                kind: target.kind,
            });
        };
        let failed = |message: String| {
            InterpretError::webhook(ask.object, ask.operation, &webhook.name, message)
        };
        if !webhook
            .interpreter_context_versions
            .iter()
            .any(|v| v == CONTEXT_VERSION)
        {
            return Err(failed(format!(
                "interpreterContextVersions {:?} does not list {CONTEXT_VERSION}, the only version this control plane sends",
                webhook.interpreter_context_versions
            )));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let answer = self
            .caller
            .call(&webhook, &context::request(&uid, ask))
            .map_err(failed)?;
        let answer = context::answer(&uid, answer).map_err(failed)?;
        Ok((webhook.name.clone(), answer))
    }

    fn patched(&self, ask: &Ask<'_>) -> Result<Value, InterpretError> {
        let (webhook, answer) = self.ask(ask)?;
        answer.patched(ask.object).map_err(|message| {
            InterpretError::webhook(ask.object, ask.operation, &webhook, message)
        })
    }
}

fn ask(operation: Operation, object: &Value) -> Ask<'_> {
    Ask {
        operation,
        object,
        observed: None,
        replicas: None,
        aggregated: None,
    }
}

impl ResourceInterpreter for WebhookInterpreter {
    fn handles(&self, target: &Target, operation: Operation) -> bool {
        // The context has no field for components.
        operation != Operation::InterpretComponent && self.webhook(target, operation).is_some()
    }

    fn get_replicas(&self, object: &Value) -> Result<ReplicaInfo, InterpretError> {
        let (_, answer) = self.ask(&ask(Operation::InterpretReplica, object))?;
        Ok(ReplicaInfo {
            replicas: answer.replicas.unwrap_or_default(),
            requirements: answer.replica_requirements,
        })
    }

    fn revise_replica(&self, object: &Value, replicas: i64) -> Result<Value, InterpretError> {
        let replicas = i32::try_from(replicas).map_err(|_| {
            InterpretError::invalid(
                object,
                "spec.replicas",
                format!("{replicas} does not fit an int32"),
            )
        })?;
        self.patched(&Ask {
            replicas: Some(replicas),
            ..ask(Operation::ReviseReplica, object)
        })
    }

    fn retain(&self, desired: &Value, observed: &Value) -> Result<Value, InterpretError> {
        self.patched(&Ask {
            observed: Some(observed),
            ..ask(Operation::Retain, desired)
        })
    }

    fn reflect_status(&self, object: &Value) -> Result<Option<Value>, InterpretError> {
        let (_, answer) = self.ask(&ask(Operation::InterpretStatus, object))?;
        Ok(answer.raw_status.filter(|status| !status.is_null()))
    }

    fn aggregate_status(
        &self,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<Value, InterpretError> {
        self.patched(&Ask {
            aggregated: Some(items),
            ..ask(Operation::AggregateStatus, template)
        })
    }

    fn interpret_health(&self, object: &Value) -> Result<bool, InterpretError> {
        let (webhook, answer) = self.ask(&ask(Operation::InterpretHealth, object))?;
        answer.healthy.ok_or_else(|| {
            InterpretError::webhook(
                object,
                Operation::InterpretHealth,
                &webhook,
                "the response has no healthy field".into(),
            )
        })
    }

    fn get_dependencies(
        &self,
        object: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpretError> {
        let (_, answer) = self.ask(&ask(Operation::InterpretDependency, object))?;
        Ok(answer.dependencies.unwrap_or_default())
    }
}
