//! What a process inside a simulated container sees: its environment and the files the kubelet
//! puts there (mounted ConfigMaps and Secrets, downward API items, `/etc/hostname`,
//! `/etc/hosts`), computed from the Pod and the objects it references. Pure: the caller reads
//! the referenced ConfigMaps and Secrets ([`Container::referenced`]) and passes them in.
//!
//! Environment order follows a container runtime's: `PATH` and `HOSTNAME` first, then the
//! container's `envFrom` sources, then its `env` (a later name replaces an earlier one in
//! place), then `HOME`. Service-link variables (`KUBERNETES_SERVICE_HOST`, ...) are not
//! simulated (docs/compat.md).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

use crate::meta;

/// The `PATH` a typical base image sets.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The ConfigMaps and Secrets a container may read, by name, in the pod's namespace.
#[derive(Clone, Debug, Default)]
pub struct Referenced {
    pub config_maps: BTreeMap<String, Value>,
    pub secrets: BTreeMap<String, Value>,
}

/// The names a pod's container refers to, for the caller to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    pub config_maps: Vec<String>,
    pub secrets: Vec<String>,
}

/// A simulated container's view of the world.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    pub hostname: String,
    /// In order, names unique.
    pub env: Vec<(String, String)>,
    /// Absolute path → content.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Why a container can not be entered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChooseError {
    #[error(
        "a container name must be specified for pod {pod}, choose one of: [{}]",
        names.join(" ")
    )]
    Ambiguous { pod: String, names: Vec<String> },
    #[error("container {container} is not valid for pod {pod}")]
    Unknown { pod: String, container: String },
}

/// The container spec `wanted` names, or the only container when none is named.
pub fn choose<'a>(pod: &'a Value, wanted: Option<&str>) -> Result<&'a Value, ChooseError> {
    let containers: Vec<&Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|all| all.iter().collect())
        .unwrap_or_default();
    let names = || {
        containers
            .iter()
            .map(|c| meta::str_at(c, "/name").to_string())
            .collect::<Vec<_>>()
    };
    match wanted.filter(|w| !w.is_empty()) {
        Some(name) => containers
            .iter()
            .copied()
            .find(|c| meta::str_at(c, "/name") == name)
            .ok_or_else(|| ChooseError::Unknown {
                pod: meta::name(pod).to_string(),
                container: name.to_string(),
            }),
        None if containers.len() == 1 => Ok(containers[0]),
        None => Err(ChooseError::Ambiguous {
            pod: meta::name(pod).to_string(),
            names: names(),
        }),
    }
}

/// The ConfigMaps and Secrets `container` (a spec from `pod`) reads through env or volumes.
pub fn references(pod: &Value, container: &Value) -> References {
    let mut refs = References::default();
    let add = |list: &mut Vec<String>, name: &str| {
        if !name.is_empty() && !list.iter().any(|n| n == name) {
            list.push(name.to_string());
        }
    };
    for source in array(container, "/envFrom") {
        add(
            &mut refs.config_maps,
            meta::str_at(source, "/configMapRef/name"),
        );
        add(&mut refs.secrets, meta::str_at(source, "/secretRef/name"));
    }
    for var in array(container, "/env") {
        add(
            &mut refs.config_maps,
            meta::str_at(var, "/valueFrom/configMapKeyRef/name"),
        );
        add(
            &mut refs.secrets,
            meta::str_at(var, "/valueFrom/secretKeyRef/name"),
        );
    }
    for volume in array(pod, "/spec/volumes") {
        add(
            &mut refs.config_maps,
            meta::str_at(volume, "/configMap/name"),
        );
        add(
            &mut refs.secrets,
            meta::str_at(volume, "/secret/secretName"),
        );
        for source in array(volume, "/projected/sources") {
            add(
                &mut refs.config_maps,
                meta::str_at(source, "/configMap/name"),
            );
            add(&mut refs.secrets, meta::str_at(source, "/secret/name"));
        }
    }
    refs
}

fn array<'a>(object: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A ConfigMap's or Secret's keys as bytes (Secret `data` is base64; `stringData` never stored).
fn data_of(object: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let decode = |text: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap_or_default()
    };
    let is_secret = object.get("kind").and_then(Value::as_str) == Some("Secret");
    if let Some(data) = object.get("data").and_then(Value::as_object) {
        for (key, value) in data {
            let text = value.as_str().unwrap_or_default();
            let bytes = if is_secret {
                decode(text)
            } else {
                text.as_bytes().to_vec()
            };
            out.insert(key.clone(), bytes);
        }
    }
    if let Some(data) = object.get("binaryData").and_then(Value::as_object) {
        for (key, value) in data {
            out.insert(key.clone(), decode(value.as_str().unwrap_or_default()));
        }
    }
    out
}

/// A downward API `fieldRef` value.
fn field_value(pod: &Value, path: &str) -> String {
    let label_or_annotation = |prefix: &str, field: &str| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix("']"))
            .map(|key| {
                pod.pointer(&format!("/metadata/{field}"))
                    .and_then(|m| m.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
    };
    if let Some(value) = label_or_annotation("metadata.labels['", "labels")
        .or_else(|| label_or_annotation("metadata.annotations['", "annotations"))
    {
        return value;
    }
    let pointer = match path {
        "metadata.name" => "/metadata/name",
        "metadata.namespace" => "/metadata/namespace",
        "metadata.uid" => "/metadata/uid",
        "spec.nodeName" => "/spec/nodeName",
        "spec.serviceAccountName" => "/spec/serviceAccountName",
        "status.podIP" => "/status/podIP",
        "status.hostIP" => "/status/hostIP",
        _ => return String::new(),
    };
    meta::str_at(pod, pointer).to_string()
}

/// The hostname a pod's containers see: `spec.hostname`, else the pod's name (at most 63 bytes).
pub fn hostname(pod: &Value) -> String {
    let explicit = meta::str_at(pod, "/spec/hostname");
    let name = if explicit.is_empty() {
        meta::name(pod)
    } else {
        explicit
    };
    name.chars().take(63).collect()
}

fn set_env(env: &mut Vec<(String, String)>, name: &str, value: String) {
    match env.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => env.push((name.to_string(), value)),
    }
}

/// `$(NAME)` references to earlier variables expanded, `$$(NAME)` kept literally, as the kubelet does.
fn expand_references(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(escaped) = tail.strip_prefix("$$") {
            out.push('$');
            rest = escaped;
        } else if let Some(inner) = tail.strip_prefix("$(")
            && let Some(end) = inner.find(')')
            && let Some((_, found)) = env.iter().find(|(n, _)| n == &inner[..end])
        {
            out.push_str(found);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The view of `container` (a spec from `pod`), given the objects it references.
pub fn view(pod: &Value, container: &Value, referenced: &Referenced) -> Container {
    let hostname = hostname(pod);
    let mut env = vec![
        ("PATH".to_string(), DEFAULT_PATH.to_string()),
        ("HOSTNAME".to_string(), hostname.clone()),
    ];
    for source in array(container, "/envFrom") {
        let prefix = meta::str_at(source, "/prefix");
        let data = if let Some(name) = source.pointer("/configMapRef/name").and_then(Value::as_str)
        {
            referenced.config_maps.get(name).map(data_of)
        } else {
            let name = meta::str_at(source, "/secretRef/name");
            referenced.secrets.get(name).map(data_of)
        };
        for (key, value) in data.unwrap_or_default() {
            set_env(
                &mut env,
                &format!("{prefix}{key}"),
                String::from_utf8_lossy(&value).into_owned(),
            );
        }
    }
    for var in array(container, "/env") {
        let name = meta::str_at(var, "/name");
        let value = if let Some(value) = var.get("value").and_then(Value::as_str) {
            expand_references(value, &env)
        } else if let Some(selector) = var.pointer("/valueFrom/configMapKeyRef") {
            let key = meta::str_at(selector, "/key");
            match referenced
                .config_maps
                .get(meta::str_at(selector, "/name"))
                .and_then(|cm| data_of(cm).remove(key))
            {
                Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                // An optional key that is missing leaves the variable unset.
                None => continue,
            }
        } else if let Some(selector) = var.pointer("/valueFrom/secretKeyRef") {
            let key = meta::str_at(selector, "/key");
            match referenced
                .secrets
                .get(meta::str_at(selector, "/name"))
                .and_then(|s| data_of(s).remove(key))
            {
                Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                None => continue,
            }
        } else if let Some(path) = var
            .pointer("/valueFrom/fieldRef/fieldPath")
            .and_then(Value::as_str)
        {
            field_value(pod, path)
        } else {
            String::new()
        };
        set_env(&mut env, name, value);
    }
    if !env.iter().any(|(n, _)| n == "HOME") {
        env.push(("HOME".to_string(), "/root".to_string()));
    }

    let mut files = BTreeMap::new();
    files.insert(
        "/etc/hostname".to_string(),
        format!("{hostname}\n").into_bytes(),
    );
    files.insert("/etc/hosts".to_string(), hosts_file(pod, &hostname));
    let volumes: BTreeMap<&str, &Value> = array(pod, "/spec/volumes")
        .map(|v| (meta::str_at(v, "/name"), v))
        .collect();
    for mount in array(container, "/volumeMounts") {
        let Some(volume) = volumes.get(meta::str_at(mount, "/name")) else {
            continue;
        };
        let contents = volume_files(pod, volume, referenced);
        let mount_path = meta::str_at(mount, "/mountPath").trim_end_matches('/');
        let sub_path = meta::str_at(mount, "/subPath");
        if sub_path.is_empty() {
            for (relative, bytes) in contents {
                files.insert(format!("{mount_path}/{relative}"), bytes);
            }
        } else if let Some(bytes) = contents.get(sub_path) {
            files.insert(mount_path.to_string(), bytes.clone());
        }
    }
    Container {
        name: meta::str_at(container, "/name").to_string(),
        hostname,
        env,
        files,
    }
}

/// The kubelet-managed `/etc/hosts`.
fn hosts_file(pod: &Value, hostname: &str) -> Vec<u8> {
    let mut text = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    let ip = meta::str_at(pod, "/status/podIP");
    if !ip.is_empty() {
        text.push_str(&format!("{ip}\t{hostname}\n"));
    }
    text.into_bytes()
}

/// `items` selects and renames keys; without it every key is a file named after it.
fn project(data: BTreeMap<String, Vec<u8>>, items: Option<&Value>) -> BTreeMap<String, Vec<u8>> {
    match items.and_then(Value::as_array) {
        Some(items) if !items.is_empty() => items
            .iter()
            .filter_map(|item| {
                let key = meta::str_at(item, "/key");
                let path = meta::str_at(item, "/path");
                data.get(key).map(|bytes| (path.to_string(), bytes.clone()))
            })
            .collect(),
        _ => data,
    }
}

/// A volume's files, relative to its mount point.
fn volume_files(pod: &Value, volume: &Value, referenced: &Referenced) -> BTreeMap<String, Vec<u8>> {
    let config_map = |source: &Value| {
        referenced
            .config_maps
            .get(meta::str_at(source, "/name"))
            .map(|cm| project(data_of(cm), source.get("items")))
            .unwrap_or_default()
    };
    let secret = |source: &Value, name_field: &str| {
        referenced
            .secrets
            .get(meta::str_at(source, name_field))
            .map(|s| project(data_of(s), source.get("items")))
            .unwrap_or_default()
    };
    let downward = |source: &Value| {
        array(source, "/items")
            .filter_map(|item| {
                let field = item.pointer("/fieldRef/fieldPath")?.as_str()?;
                Some((
                    meta::str_at(item, "/path").to_string(),
                    field_value(pod, field).into_bytes(),
                ))
            })
            .collect::<BTreeMap<_, _>>()
    };
    if let Some(source) = volume.get("configMap") {
        return config_map(source);
    }
    if let Some(source) = volume.get("secret") {
        return secret(source, "/secretName");
    }
    if let Some(source) = volume.get("downwardAPI") {
        return downward(source);
    }
    let mut files = BTreeMap::new();
    for source in array(volume, "/projected/sources") {
        if let Some(cm) = source.get("configMap") {
            files.extend(config_map(cm));
        } else if let Some(s) = source.get("secret") {
            files.extend(secret(s, "/name"));
        } else if let Some(d) = source.get("downwardAPI") {
            files.extend(downward(d));
        }
    }
    files
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {
                "containers": [{
                    "name": "app",
                    "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
                    "env": [
                        {"name": "GREETING", "value": "hello"},
                        {"name": "MESSAGE", "value": "$(GREETING) world $$(GREETING)"},
                        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                        {"name": "MISSING", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope", "optional": true}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                    ],
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/etc/app/"},
                        {"name": "creds", "mountPath": "/etc/secret/pw", "subPath": "password"},
                        {"name": "api", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
                    ],
                }],
                "volumes": [
                    {"name": "config", "configMap": {"name": "settings", "items": [{"key": "mode", "path": "mode.conf"}]}},
                    {"name": "creds", "secret": {"secretName": "creds"}},
                    {"name": "api", "projected": {"sources": [
                        {"serviceAccountToken": {"path": "token"}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
                    ]}},
                ],
            },
            "status": {"podIP": "10.244.1.7"},
        })
    }

    fn referenced() -> Referenced {
        Referenced {
            config_maps: [(
                "settings".to_string(),
                json!({"kind": "ConfigMap", "data": {"mode": "fast", "level": "3"}}),
            )]
            .into(),
            secrets: [(
                "creds".to_string(),
                json!({"kind": "Secret", "data": {"password": "czNjcjN0"}}),
            )]
            .into(),
        }
    }

    #[test]
    fn environment_in_runtime_order_with_references_resolved() {
        let pod = pod();
        let container = choose(&pod, None).unwrap();
        let view = view(&pod, container, &referenced());
        let names: Vec<&str> = view.env.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOSTNAME",
                "CFG_level",
                "CFG_mode",
                "GREETING",
                "MESSAGE",
                "PASSWORD",
                "POD_NAMESPACE",
                "APP",
                "HOME"
            ]
        );
        let get = |name: &str| &view.env.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(get("HOSTNAME"), "web-0");
        assert_eq!(get("MESSAGE"), "hello world $(GREETING)");
        assert_eq!(get("PASSWORD"), "s3cr3t");
        assert_eq!(get("POD_NAMESPACE"), "shop");
        assert_eq!(get("APP"), "web");
    }

    #[test]
    fn mounted_files_follow_items_sub_paths_and_projections() {
        let pod = pod();
        let view = view(&pod, choose(&pod, Some("app")).unwrap(), &referenced());
        let file = |path: &str| {
            view.files
                .get(path)
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        assert_eq!(file("/etc/app/mode.conf").as_deref(), Some("fast"));
        assert_eq!(file("/etc/app/level"), None);
        assert_eq!(file("/etc/secret/pw").as_deref(), Some("s3cr3t"));
        assert_eq!(
            file("/var/run/secrets/kubernetes.io/serviceaccount/namespace").as_deref(),
            Some("shop")
        );
        assert_eq!(file("/etc/hostname").as_deref(), Some("web-0\n"));
        assert!(file("/etc/hosts").unwrap().ends_with("10.244.1.7\tweb-0\n"));
    }

    #[test]
    fn references_and_container_choice() {
        let pod = pod();
        let refs = references(&pod, choose(&pod, None).unwrap());
        assert_eq!(refs.config_maps, ["settings"]);
        assert_eq!(refs.secrets, ["creds"]);
        let two = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            choose(&two, None).unwrap_err().to_string(),
            "a container name must be specified for pod p, choose one of: [a b]"
        );
        assert_eq!(
            choose(&two, Some("c")).unwrap_err().to_string(),
            "container c is not valid for pod p"
        );
    }
}
