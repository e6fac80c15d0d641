//! Server-side printing: `meta.k8s.io/v1` Tables as kubectl asks for them with
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
//!
//! Invariants: every row has exactly one cell per column definition; cells are computed here
//! (kubectl prints them verbatim), with `now` supplied by the caller for AGE-like columns.

mod age;
mod cells;
mod certificates;
mod cluster;
mod core_printers;
mod custom;
mod other_printers;
mod policy_printers;
mod scaling_printers;
mod storage_printers;
mod workload_printers;

pub(crate) use cells::selector_string;

use apimachinery::{Printer, ResourceDef};
use jiff::Timestamp;
use serde_json::{Map, Value, json};

/// What each row carries besides its cells (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// Cells only.
    None,
    /// A `PartialObjectMetadata` (kubectl's default; needed for `-A`, `--show-labels`, `-L`).
    #[default]
    Metadata,
    /// The whole object (kubectl's `--sort-by`).
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query value; absent means `Metadata`.
    pub fn parse(value: Option<&str>) -> Option<Self> {
        match value {
            None | Some("") | Some("Metadata") => Some(Self::Metadata),
            Some("None") => Some(Self::None),
            Some("Object") => Some(Self::Object),
            Some(_) => None,
        }
    }
}

/// One column definition of a built-in printer.
pub(crate) struct Column {
    pub name: &'static str,
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i32,
}

/// Shorthand constructors keep the printer tables readable.
pub(crate) const fn name_column() -> Column {
    Column {
        name: "Name",
        type_: "string",
        format: "name",
        description: "Name of the object.",
        priority: 0,
    }
}

pub(crate) const fn column(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "string",
        format: "",
        description,
        priority: 0,
    }
}

pub(crate) const fn wide(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "string",
        format: "",
        description,
        priority: 1,
    }
}

pub(crate) const fn age_column() -> Column {
    column("Age", "Time since the object was created.")
}

/// A hand-written printer: its columns and how to compute one row's cells.
pub(crate) struct BuiltinPrinter {
    pub columns: &'static [Column],
    pub cells: fn(&Value, Timestamp) -> Vec<Value>,
}

fn builtin_printer(group: &str, kind: &str) -> BuiltinPrinter {
    let found = match group {
        "" => core_printers::printer(kind),
        "cluster.karmada.io" if kind == "Cluster" => Some(cluster::PRINTER),
        "certificates.k8s.io" if kind == "CertificateSigningRequest" => Some(certificates::PRINTER),
        _ => {
            workload_printers::printer(group, kind).or_else(|| other_printers::printer(group, kind))
        }
    };
    found
        .or_else(|| scaling_printers::printer(group, kind))
        .or_else(|| storage_printers::printer(group, kind))
        .or_else(|| policy_printers::printer(group, kind))
        .unwrap_or(FALLBACK)
}

/// Kinds without a dedicated printer still get NAME and AGE.
const FALLBACK: BuiltinPrinter = BuiltinPrinter {
    columns: &[name_column(), age_column()],
    cells: name_and_age,
};

fn name_and_age(object: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(cells::name(object)),
        json!(age::since(&object["metadata"]["creationTimestamp"], now)),
    ]
}

/// The Table for `objects` of kind `def`. `metadata` is left empty: the caller sets
/// `resourceVersion` and `continue`.
pub fn table(
    def: &ResourceDef,
    objects: &[Value],
    include: IncludeObject,
    now: Timestamp,
) -> Value {
    let (columns, rows): (Vec<Value>, Vec<Vec<Value>>) = match &def.printer {
        Printer::Builtin => {
            let printer = builtin_printer(&def.group, &def.kind);
            let columns = printer.columns.iter().map(column_definition).collect();
            (
                columns,
                objects
                    .iter()
                    .map(|object| (printer.cells)(object, now))
                    .collect(),
            )
        }
        Printer::Columns(declared) => {
            let columns = custom::effective_columns(declared);
            let definitions = std::iter::once(column_definition(&name_column()))
                .chain(columns.iter().map(custom::column_definition))
                .collect();
            (
                definitions,
                objects
                    .iter()
                    .map(|object| custom::cells(&columns, object, now))
                    .collect(),
            )
        }
    };
    let rows: Vec<Value> = objects
        .iter()
        .zip(rows)
        .map(|(object, cells)| {
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(cells));
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row.insert("object".into(), partial_object_metadata(object));
                }
                IncludeObject::Object => {
                    row.insert("object".into(), object.clone());
                }
            }
            Value::Object(row)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// `{"kind":"PartialObjectMetadata",…}` with the object's metadata minus `managedFields`.
pub fn partial_object_metadata(object: &Value) -> Value {
    let mut metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Value::Object(map) = &mut metadata {
        map.remove("managedFields");
    }
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata})
}

fn column_definition(column: &Column) -> Value {
    json!({
        "name": column.name,
        "type": column.type_,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    })
}
