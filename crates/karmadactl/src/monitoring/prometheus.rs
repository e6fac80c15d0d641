//! The Prometheus of `karmadactl local-up --monitoring`: Debian's `prometheus` scraping every component and
//! member-sim of the local federation, with the rules of `monitoring/` loaded.
//!
//! The scrape configuration is generated from what the federation publishes, never typed: the API server's and
//! each member's address and client certificate from their kubeconfigs, and the address each controller-manager,
//! scheduler and agent wrote beside its pid file (`--metrics-address-file`). Everything lives in
//! `DATA/monitoring/`: `prometheus.yml`, `karmada.rules.yaml`, the client certificates under `tls/`, the dashboards
//! to import into Grafana under `dashboards/`, and the time-series database under `data/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine;
use serde_json::{Value, json};

use crate::components::{self, Launch};

/// The component name of the Prometheus process (its pid file and log).
pub const COMPONENT: &str = "prometheus";
pub const DIR: &str = "monitoring";
pub const RULES_FILE: &str = "karmada.rules.yaml";
const CONFIG_FILE: &str = "prometheus.yml";
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One endpoint to scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The scrape job's own name (unique).
    pub scrape: String,
    /// The `job` label its series get.
    pub job: String,
    /// `host:port`.
    pub address: String,
    /// Client certificate files for an HTTPS endpoint; `None` for plain HTTP.
    pub tls: Option<TlsFiles>,
    /// More labels for its series.
    pub labels: BTreeMap<String, String>,
    /// `/metrics`, or `/metrics/placements` for the controllers' per-workload placement series.
    pub path: &'static str,
    /// Scraped this many times less often than the rest.
    pub slower: u32,
}

/// The controllers' per-workload placement series are scraped this many times less often than the rest.
const PLACEMENTS_SLOWER: u32 = 4;

#[derive(Clone, Debug, PartialEq)]
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The Prometheus configuration: every target scraped every `interval`, rules evaluated as often.
pub fn config(interval: &str, rules_file: &str, targets: &[Target]) -> Value {
    let scrape_configs: Vec<Value> = targets
        .iter()
        .map(|target| {
            let mut labels: serde_json::Map<String, Value> = target
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            // A target's own `job` label wins over the job name, so members share one job.
            labels.insert("job".into(), json!(target.job));
            let mut scrape = json!({
                "job_name": target.scrape,
                "scheme": if target.tls.is_some() { "https" } else { "http" },
                "metrics_path": target.path,
                "static_configs": [{"targets": [target.address], "labels": labels}],
            });
            if target.slower > 1 {
                let every = times(interval, target.slower);
                scrape["scrape_interval"] = json!(every);
                scrape["scrape_timeout"] = json!(every);
            }
            if let Some(tls) = &target.tls {
                scrape["tls_config"] = json!({
                    "ca_file": tls.ca,
                    "cert_file": tls.cert,
                    "key_file": tls.key,
                });
            }
            scrape
        })
        .collect();
    json!({
        "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
        "rule_files": [rules_file],
        "scrape_configs": scrape_configs,
    })
}

/// A Prometheus duration (`15s`) times `factor` (`60s`).
fn times(interval: &str, factor: u32) -> String {
    let digits = interval.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &interval[digits.len()..];
    match digits.parse::<u64>() {
        Ok(value) => format!("{}{unit}", value * u64::from(factor)),
        Err(_) => interval.to_string(),
    }
}

/// The server address and client credentials of `context` in `kubeconfig`, their PEMs written under `tls_dir`
/// as `NAME-ca.crt`, `NAME.crt` and `NAME.key`.
pub fn kubeconfig_target(
    kubeconfig: &Value,
    context: &str,
    name: &str,
    tls_dir: &Path,
) -> anyhow::Result<(String, TlsFiles)> {
    let named = |list: &str, wanted: &str| -> anyhow::Result<Value> {
        kubeconfig[list]
            .as_array()
            .into_iter()
            .flatten()
            .find(|entry| entry["name"] == wanted)
            .cloned()
            .with_context(|| format!("the kubeconfig has no {list} entry {wanted:?}"))
    };
    let context_entry = named("contexts", context)?;
    let cluster = named(
        "clusters",
        context_entry["context"]["cluster"]
            .as_str()
            .unwrap_or_default(),
    )?;
    let user = named(
        "users",
        context_entry["context"]["user"]
            .as_str()
            .unwrap_or_default(),
    )?;
    let server = cluster["cluster"]["server"].as_str().unwrap_or_default();
    let address = server
        .strip_prefix("https://")
        .with_context(|| format!("{context}: server {server:?} is not an https:// address"))?
        .trim_end_matches('/')
        .to_string();
    let pem = |value: &Value, field: &str| -> anyhow::Result<Vec<u8>> {
        let data = value[field]
            .as_str()
            .with_context(|| format!("{context}: the kubeconfig has no {field}"))?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .with_context(|| format!("{context}: {field} is not base64"))
    };
    std::fs::create_dir_all(tls_dir).with_context(|| format!("creating {}", tls_dir.display()))?;
    let files = TlsFiles {
        ca: tls_dir.join(format!("{name}-ca.crt")),
        cert: tls_dir.join(format!("{name}.crt")),
        key: tls_dir.join(format!("{name}.key")),
    };
    std::fs::write(
        &files.ca,
        pem(&cluster["cluster"], "certificate-authority-data")?,
    )?;
    std::fs::write(&files.cert, pem(&user["user"], "client-certificate-data")?)?;
    let key = pem(&user["user"], "client-key-data")?;
    apiserver_auth::files::write_private(&files.key, &key)
        .with_context(|| format!("writing {}", files.key.display()))?;
    Ok((address, files))
}

/// The address a component published beside its pid file, if it did.
pub fn published_address(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let address = text.trim();
    (!address.is_empty()).then(|| address.to_string())
}

/// The HTTP components of the federation in `data_dir` that published their metrics address: the
/// controller-manager, the scheduler (or the all-in-one process's components) and each agent.
pub fn component_targets(data_dir: &Path) -> Vec<Target> {
    let mut targets = Vec::new();
    for (component, job) in [
        (
            crate::cmd::init::CONTROLLER_MANAGER,
            "karmada-controller-manager",
        ),
        (crate::cmd::init::SCHEDULER, "karmada-scheduler"),
        // The all-in-one process publishes its components' endpoint under the API server's name.
        (crate::cmd::init::APISERVER, "karmada-all-in-one"),
    ] {
        if components::live_pid(data_dir, component).is_none() {
            continue;
        }
        if let Some(address) =
            published_address(&components::metrics_address_file(data_dir, component))
        {
            let target = Target {
                scrape: job.to_string(),
                job: job.to_string(),
                address,
                tls: None,
                labels: BTreeMap::new(),
                path: "/metrics",
                slower: 1,
            };
            if component != crate::cmd::init::SCHEDULER {
                targets.push(Target {
                    scrape: format!("{job}-placements"),
                    path: "/metrics/placements",
                    slower: PLACEMENTS_SLOWER,
                    ..target.clone()
                });
            }
            targets.push(target);
        }
    }
    targets.extend(estimator_targets(data_dir));
    let agents = data_dir.join("agents");
    let mut entries: Vec<_> = std::fs::read_dir(&agents)
        .into_iter()
        .flatten()
        .flatten()
        .collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let cluster = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        let file = dir.join(crate::cmd::register::agent_process::METRICS_ADDRESS_FILE);
        if crate::cmd::register::agent_process::live_pid(&dir).is_none() {
            continue;
        }
        if let Some(address) = published_address(&file) {
            targets.push(Target {
                scrape: format!("karmada-agent-{cluster}"),
                job: "karmada-agent".to_string(),
                address,
                tls: None,
                labels: BTreeMap::from([("cluster".to_string(), cluster)]),
                path: "/metrics",
                slower: 1,
            });
        }
    }
    targets
}

/// The scheduler estimators running from `data_dir` (`karmada-scheduler-estimator-<cluster>.pid`) that published
/// their metrics address, one target each, labelled with the cluster.
fn estimator_targets(data_dir: &Path) -> Vec<Target> {
    let prefix = crate::cmd::estimators::component("");
    let mut clusters: Vec<String> = std::fs::read_dir(data_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let cluster = file.strip_prefix(&prefix)?.strip_suffix(".pid")?;
            (!cluster.is_empty()).then(|| cluster.to_string())
        })
        .collect();
    clusters.sort();
    clusters
        .into_iter()
        .filter_map(|cluster| {
            let name = crate::cmd::estimators::component(&cluster);
            components::live_pid(data_dir, &name)?;
            let address = published_address(&components::metrics_address_file(data_dir, &name))?;
            Some(Target {
                scrape: name,
                job: "karmada-scheduler-estimator".to_string(),
                address,
                tls: None,
                labels: BTreeMap::from([("cluster".to_string(), cluster)]),
                path: "/metrics",
                slower: 1,
            })
        })
        .collect()
}

/// What `local-up --monitoring` asked for.
#[derive(Clone, Debug)]
pub struct MonitoringOptions {
    /// Port Prometheus listens on (127.0.0.1); 0 picks a free one.
    pub port: u16,
    /// How often every target is scraped and the rules evaluated, e.g. `15s`.
    pub scrape_interval: String,
}

/// Writes the configuration, rules and dashboards to `DATA/monitoring` and starts Prometheus (or reloads a
/// running one). `apiserver` and `members` name the kubeconfig contexts of the HTTPS targets. Returns the URL.
pub async fn up(
    binary_data_dir: &Path,
    kubeconfig: &Value,
    apiserver_context: &str,
    members: &[(&str, Value)],
    options: &MonitoringOptions,
) -> anyhow::Result<String> {
    let data_dir = binary_data_dir;
    let dir = data_dir.join(DIR);
    let tls_dir = dir.join("tls");
    std::fs::create_dir_all(dir.join("dashboards"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let mut targets = Vec::new();
    let (address, tls) =
        kubeconfig_target(kubeconfig, apiserver_context, "karmada-apiserver", &tls_dir)?;
    targets.push(Target {
        scrape: "karmada-apiserver".into(),
        job: "karmada-apiserver".into(),
        address,
        tls: Some(tls),
        labels: BTreeMap::new(),
        path: "/metrics",
        slower: 1,
    });
    for (name, member_kubeconfig) in members {
        let (address, tls) = kubeconfig_target(
            member_kubeconfig,
            name,
            &format!("member-sim-{name}"),
            &tls_dir,
        )?;
        targets.push(Target {
            scrape: format!("member-sim-{name}"),
            job: "member-sim".into(),
            address,
            tls: Some(tls),
            labels: BTreeMap::from([("cluster".to_string(), name.to_string())]),
            path: "/metrics",
            slower: 1,
        });
    }
    targets.extend(component_targets(data_dir));

    std::fs::write(dir.join(RULES_FILE), super::RULES)?;
    std::fs::write(
        dir.join("karmada-prometheusrule.yaml"),
        super::PROMETHEUS_RULE,
    )?;
    for (file, json) in super::DASHBOARDS {
        std::fs::write(dir.join("dashboards").join(file), json)?;
    }
    let config = config(&options.scrape_interval, RULES_FILE, &targets);
    std::fs::write(
        dir.join(CONFIG_FILE),
        serde_json::to_string_pretty(&config)?,
    )?;

    if let Some(pid) = components::live_pid(data_dir, COMPONENT) {
        // A running Prometheus takes the new configuration and rules on SIGHUP.
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGHUP,
        )
        .context("asking Prometheus to reload its configuration")?;
        let address = std::fs::read_to_string(dir.join("address"))
            .unwrap_or_default()
            .trim()
            .to_string();
        return Ok(format!("http://{address}"));
    }
    let binary = find_prometheus()?;
    let port = match options.port {
        0 => free_port()?,
        port => {
            components::ensure_port_free("127.0.0.1", port, "--monitoring-port")?;
            port
        }
    };
    let address = format!("127.0.0.1:{port}");
    std::fs::write(dir.join("address"), format!("{address}\n"))?;
    let args = vec![
        format!("--config.file={}", dir.join(CONFIG_FILE).display()).into(),
        format!("--storage.tsdb.path={}", dir.join("data").display()).into(),
        format!("--web.listen-address={address}").into(),
        "--web.enable-lifecycle".into(),
        "--storage.tsdb.retention.time=7d".into(),
    ];
    let mut child = components::launch(Launch {
        name: COMPONENT,
        binary: &binary,
        args,
        data_dir,
        exit_with_stdin: false,
    })?;
    let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
    loop {
        components::check_running(&mut child, data_dir, COMPONENT)?;
        if http_get(&address, "/-/ready")
            .await
            .is_ok_and(|(status, _)| status == 200)
        {
            return Ok(format!("http://{address}"));
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "Prometheus did not become ready within {}s; see {}",
                READY_TIMEOUT.as_secs(),
                components::log_file(data_dir, COMPONENT).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Debian's `prometheus` on PATH.
pub fn find_prometheus() -> anyhow::Result<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("prometheus"))
        .find(|candidate| candidate.is_file())
        .context(
            "--monitoring needs Prometheus: `prometheus` was not found on PATH; install it with \
             `apt-get install prometheus` (./scripts/setup.sh does)",
        )
}

fn free_port() -> anyhow::Result<u16> {
    let ports =
        store_etcd::launch::free_loopback_ports(1).context("finding a free port for Prometheus")?;
    ports
        .first()
        .copied()
        .context("finding a free port for Prometheus")
}

/// A plain HTTP/1.0 GET of `path` from `address`: the status code and the body.
pub async fn http_get(address: &str, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::TcpStream::connect(address),
    )
    .await
    .context("connecting")??;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
        .await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .context("reading the answer")??;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .context("no HTTP status line")?;
    Ok((status, body.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_a_job_of_its_own_with_the_shared_job_label_and_its_certificates() {
        let targets = vec![
            Target {
                scrape: "karmada-apiserver".into(),
                job: "karmada-apiserver".into(),
                address: "127.0.0.1:32443".into(),
                tls: Some(TlsFiles {
                    ca: "/d/tls/a-ca.crt".into(),
                    cert: "/d/tls/a.crt".into(),
                    key: "/d/tls/a.key".into(),
                }),
                labels: BTreeMap::new(),
                path: "/metrics",
                slower: 1,
            },
            Target {
                scrape: "karmada-agent-member3".into(),
                job: "karmada-agent".into(),
                address: "127.0.0.1:40001".into(),
                tls: None,
                labels: BTreeMap::from([("cluster".into(), "member3".into())]),
                path: "/metrics",
                slower: 1,
            },
            Target {
                scrape: "karmada-controller-manager-placements".into(),
                job: "karmada-controller-manager".into(),
                address: "127.0.0.1:40002".into(),
                tls: None,
                labels: BTreeMap::new(),
                path: "/metrics/placements",
                slower: 4,
            },
        ];
        let config = config("1s", "karmada.rules.yaml", &targets);
        assert_eq!(config["global"]["scrape_interval"], "1s");
        assert_eq!(config["rule_files"], json!(["karmada.rules.yaml"]));
        let scrapes = config["scrape_configs"].as_array().unwrap();
        assert_eq!(scrapes[0]["scheme"], "https");
        assert_eq!(scrapes[0]["tls_config"]["key_file"], "/d/tls/a.key");
        assert_eq!(
            scrapes[1]["static_configs"][0],
            json!({"targets": ["127.0.0.1:40001"], "labels": {"cluster": "member3", "job": "karmada-agent"}})
        );
        assert!(scrapes[1].get("tls_config").is_none());
        assert!(scrapes[1].get("scrape_interval").is_none());
        assert_eq!(scrapes[2]["metrics_path"], "/metrics/placements");
        assert_eq!(scrapes[2]["scrape_interval"], "4s");
    }

    #[test]
    fn running_scheduler_estimators_that_published_an_address_are_targets() {
        let dir = tempfile::tempdir().unwrap();
        // A live process whose command line names the data directory, as local-up's estimators' do.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read line", "sh"])
            .arg(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id().to_string();
        // Until the child has exec'd, its command line is still this test's: wait for the shell's.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let wanted = dir.path().to_string_lossy().to_string();
        while !std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&wanted))
        {
            assert!(std::time::Instant::now() < deadline, "sh never started");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for (cluster, address) in [("member1", Some("127.0.0.1:41001")), ("member2", None)] {
            let name = crate::cmd::estimators::component(cluster);
            std::fs::write(components::pid_file(dir.path(), &name), &pid).unwrap();
            if let Some(address) = address {
                std::fs::write(components::metrics_address_file(dir.path(), &name), address)
                    .unwrap();
            }
        }
        // A stale pid file (no such process) is not a target.
        let stale = crate::cmd::estimators::component("member3");
        std::fs::write(components::pid_file(dir.path(), &stale), "999999999").unwrap();
        std::fs::write(
            components::metrics_address_file(dir.path(), &stale),
            "127.0.0.1:41003",
        )
        .unwrap();
        let targets = component_targets(dir.path());
        drop(child.stdin.take());
        child.wait().unwrap();
        let found: Vec<(String, String, String, BTreeMap<String, String>)> = targets
            .into_iter()
            .map(|t| (t.scrape, t.job, t.address, t.labels))
            .collect();
        assert_eq!(
            found,
            vec![(
                "karmada-scheduler-estimator-member1".to_string(),
                "karmada-scheduler-estimator".to_string(),
                "127.0.0.1:41001".to_string(),
                BTreeMap::from([("cluster".to_string(), "member1".to_string())]),
            )]
        );
    }

    #[test]
    fn a_kubeconfig_context_gives_the_address_and_certificate_files() {
        let dir = tempfile::tempdir().unwrap();
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let kubeconfig = json!({
            "clusters": [{"name": "m1", "cluster": {"server": "https://127.0.0.1:4000", "certificate-authority-data": b64("CA")}}],
            "users": [{"name": "m1-admin", "user": {"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")}}],
            "contexts": [{"name": "m1", "context": {"cluster": "m1", "user": "m1-admin"}}],
        });
        let (address, files) =
            kubeconfig_target(&kubeconfig, "m1", "member-sim-m1", dir.path()).unwrap();
        assert_eq!(address, "127.0.0.1:4000");
        assert_eq!(std::fs::read_to_string(&files.key).unwrap(), "KEY");
        assert_eq!(std::fs::read_to_string(&files.ca).unwrap(), "CA");
        let err = kubeconfig_target(&kubeconfig, "m2", "x", dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("no contexts entry \"m2\""),
            "{err}"
        );
    }
}
