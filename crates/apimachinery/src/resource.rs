//! What the API server needs to know to serve one kind: names, scope, subresources, columns,
//! schema. Built-in kinds, Karmada kinds and CRDs all become a [`ResourceDef`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The `scale` subresource: where replicas live in the parent object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleSubresource {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// JSON path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// JSON path of the label selector string, e.g. `.status.selector`.
    pub label_selector_path: Option<String>,
}

/// An additional printer column (CRD `additionalPrinterColumns` semantics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrinterColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date` (rendered as an age).
    pub type_: String,
    pub format: String,
    pub description: String,
    /// 0 = always shown; >0 = only with `-o wide`.
    pub priority: i32,
    /// Simple JSON path such as `.spec.priority` or `.status.conditions[?(@.type=="Ready")].status`.
    pub json_path: String,
}

/// How the server prints rows of this kind in a `meta.k8s.io/v1` Table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Printer {
    /// A hand-written printer for a built-in kind, looked up by kind name.
    Builtin,
    /// NAME, the given columns, and AGE (CRD behaviour).
    Columns(Vec<PrinterColumn>),
}

/// Everything the API server needs to serve one resource at one version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Plural, lower case: the URL segment.
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    pub scale_subresource: Option<ScaleSubresource>,
    /// Built-in kinds accept strategic merge patch and protobuf; custom kinds get 415 for both.
    pub builtin: bool,
    /// Whether `metadata.generation` is tracked (bumped on changes outside metadata and status).
    pub tracks_generation: bool,
    pub printer: Printer,
    /// OpenAPI v3 schema of the whole object, when known (used for explain, strict field
    /// validation and pruning). Shared: every clone of the definitions (one per API server, one
    /// per registry rebuild) points at the same tree.
    pub schema: Option<Arc<Value>>,
    /// Other versions served for the same group/kind share storage with the storage version.
    pub storage_version: bool,
}

impl ResourceDef {
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }

    pub fn api_version(&self) -> String {
        self.gvk().api_version()
    }

    /// `deployments.apps`, or `configmaps` for the core group: the name used in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}
