//! Small readers shared by the printers: typed field access and the formatting rules kubectl's
//! server-side printers apply (`<none>` for empty, selectors as `k=v`, container lists).

use serde_json::Value;

pub const NONE: &str = "<none>";

/// The value at `path` (object keys), if present.
pub fn at<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |value, key| value.get(*key))
}

/// The string at `path`, or `""`.
pub fn text<'a>(object: &'a Value, path: &[&str]) -> &'a str {
    at(object, path).and_then(Value::as_str).unwrap_or("")
}

/// The string at `path`, or `<none>` when empty or absent.
pub fn text_or_none(object: &Value, path: &[&str]) -> String {
    or_none(text(object, path))
}

pub fn or_none(value: &str) -> String {
    if value.is_empty() {
        NONE.into()
    } else {
        value.into()
    }
}

/// The integer at `path`, or 0.
pub fn int(object: &Value, path: &[&str]) -> i64 {
    at(object, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The array at `path`, or an empty slice.
pub fn list<'a>(object: &'a Value, path: &[&str]) -> &'a [Value] {
    at(object, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Number of keys of the map at `path`.
pub fn map_len(object: &Value, path: &[&str]) -> usize {
    at(object, path)
        .and_then(Value::as_object)
        .map_or(0, |map| map.len())
}

pub fn name(object: &Value) -> String {
    text(object, &["metadata", "name"]).into()
}

/// `a=1,b=2` from a string map, keys sorted; `<none>` when empty.
pub fn labels_string(map: Option<&Value>) -> String {
    let Some(map) = map.and_then(Value::as_object) else {
        return NONE.into();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        NONE.into()
    } else {
        pairs.join(",")
    }
}

/// A `LabelSelector` in selector syntax (`app=web,tier in (a,b),!legacy`), requirements sorted by key.
/// An absent selector selects nothing and prints `<none>`; an empty one selects everything and prints ``.
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return NONE.into();
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((
                key.clone(),
                format!("{key}={}", value.as_str().unwrap_or_default()),
            ));
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = text(expression, &["key"]).to_string();
        let mut values: Vec<&str> = list(expression, &["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let rendered = match text(expression, &["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        };
        requirements.push((key, rendered));
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, rendered)| rendered)
        .collect::<Vec<_>>()
        .join(",")
}

/// Container names and images of a pod spec, comma-joined (the wide CONTAINERS / IMAGES cells).
pub fn containers_and_images(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec
        .map(|spec| list(spec, &["containers"]))
        .unwrap_or(&[]);
    let names: Vec<&str> = containers.iter().map(|c| text(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// First `limit` items joined by `,`, with ` + N more...` when cut (upstream's list shortening).
pub fn shorten(items: &[String], limit: usize) -> String {
    if items.len() <= limit {
        return items.join(",");
    }
    format!(
        "{} + {} more...",
        items[..limit].join(","),
        items.len() - limit
    )
}

/// `True`/`False` for a present boolean, `<unset>` otherwise.
pub fn bool_or_unset(value: Option<&Value>) -> String {
    match value.and_then(Value::as_bool) {
        Some(true) => "True".into(),
        Some(false) => "False".into(),
        None => "<unset>".into(),
    }
}

/// The `status` of the condition of `type_` in the list at `path`.
pub fn condition_status<'a>(object: &'a Value, path: &[&str], type_: &str) -> Option<&'a str> {
    list(object, path)
        .iter()
        .find(|condition| text(condition, &["type"]) == type_)
        .map(|condition| text(condition, &["status"]))
}

/// A quantity in Kubernetes' canonical form (`1000m` → `1`, `2048Mi` → `2Gi`); `absent` when
/// missing, the text as written when it does not parse.
pub fn quantity(value: Option<&Value>, absent: &str) -> String {
    let text = match value {
        None | Some(Value::Null) => return absent.into(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    apimachinery::Quantity::parse(&text).map_or(text, |q| q.to_string())
}

/// An int-or-string value as written (`3`, `50%`), or `None` when absent.
pub fn int_or_string(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// Volume access modes abbreviated in kubectl's fixed order (`RWO,ROX,RWX,RWOP`), each once.
pub fn access_modes(modes: &[Value]) -> String {
    const ABBREVIATIONS: [(&str, &str); 4] = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ];
    ABBREVIATIONS
        .iter()
        .filter(|(mode, _)| modes.iter().any(|m| m.as_str() == Some(mode)))
        .map(|(_, short)| *short)
        .collect::<Vec<_>>()
        .join(",")
}
