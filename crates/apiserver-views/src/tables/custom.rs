//! Printing for kinds with declared printer columns (CRD `additionalPrinterColumns` semantics):
//! NAME, the declared columns, then AGE unless a declared column already shows the creation time.

use apimachinery::PrinterColumn;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age, cells};

const CREATION_PATH: &str = ".metadata.creationTimestamp";

/// The declared columns plus the implicit AGE column where needed.
pub fn effective_columns(declared: &[PrinterColumn]) -> Vec<PrinterColumn> {
    let mut columns = declared.to_vec();
    let shows_creation = declared
        .iter()
        .any(|c| c.json_path.trim() == CREATION_PATH || c.name.eq_ignore_ascii_case("age"));
    if !shows_creation {
        columns.push(PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "Time since the object was created.".into(),
            priority: 0,
            json_path: CREATION_PATH.into(),
        });
    }
    columns
}

/// Column definitions are sent as declared; kubectl upper-cases names itself. NAME comes first.
pub fn column_definition(column: &PrinterColumn) -> Value {
    json!({
        "name": column.name,
        "type": column.type_,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    })
}

/// NAME first, then one cell per column: dates as ages, numbers and booleans as JSON scalars,
/// several matches joined by `,`, no match as `null` (kubectl prints `<none>`).
pub fn cells(columns: &[PrinterColumn], object: &Value, now: Timestamp) -> Vec<Value> {
    let mut out = Vec::with_capacity(columns.len() + 1);
    out.push(json!(cells::name(object)));
    for column in columns {
        // A path that does not compile prints like a missing value: the CRD was accepted with it.
        let values = apimachinery::JsonPath::parse(&column.json_path)
            .map(|path| path.values(object))
            .unwrap_or_default();
        let cell = match values.as_slice() {
            [] => Value::Null,
            [single] if column.type_ == "date" => match age::parse_time(single) {
                Some(then) => json!(age::human_duration(age::seconds_between(then, now))),
                None => (*single).clone(),
            },
            [single] if !single.is_object() && !single.is_array() => (*single).clone(),
            many => json!(
                many.iter()
                    .map(|v| scalar_text(v))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        out.push(cell);
    }
    out
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
