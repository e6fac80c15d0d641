//! The cluster's DNS records (pure), as a member cluster's DNS serves them: `cluster.local` from its own Services
//! and EndpointSlices (the Kubernetes DNS specification), `clusterset.local` from its ServiceImports (the
//! multi-cluster DNS specification of the MCS KEP). [`DnsTable::build`] turns the cluster's objects into every
//! name and its records; [`DnsTable::lookup`] answers one question. The server around it
//! (`runtime::dns`) only encodes.
//!
//! `cluster.local`: `<svc>.<ns>.svc` — A/AAAA of the clusterIP, or of every ready endpoint of a headless
//! Service (each also as `<hostname>.<svc>.<ns>.svc`); `_<port>._<proto>.<svc>.<ns>.svc` SRV for named ports.
//! `clusterset.local`: `<svc>.<ns>.svc` — A/AAAA of the import's clusterset IP (`spec.ips`), or of every ready
//! endpoint of a Headless import (each also as `<hostname>.<cluster>.<svc>.<ns>.svc`, the cluster being the one the
//! slice came from); SRV for named ports. A headless name with no ready endpoint does not exist (NXDOMAIN), as
//! the specification asks. `dns-version` TXT records give the schema versions. A name under a zone that has no
//! records but names below it (`svc.cluster.local`) exists without data; other names under a zone are NXDOMAIN
//! (the server adds the zone's SOA); names outside both zones are refused.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

use crate::mcs::{PROVISION_CLUSTER_ANNOTATION, import_slices};
use crate::meta;
use crate::objects::Objects;
use crate::services::SERVICE_NAME_LABEL;

/// The zones served.
pub const CLUSTER_ZONE: &str = "cluster.local";
pub const CLUSTERSET_ZONE: &str = "clusterset.local";
pub const ZONES: [&str; 2] = [CLUSTER_ZONE, CLUSTERSET_ZONE];
/// Seconds a client may cache an answer (what CoreDNS's kubernetes plugin gives by default).
pub const TTL: u32 = 5;

/// One record's data.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordData {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: String,
    },
    Txt(String),
}

/// The record types a question may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryType {
    A,
    Aaaa,
    Srv,
    Txt,
    /// Every record of the name.
    Any,
    /// A type this server holds no records of (MX, NS, PTR...).
    Other,
}

impl RecordData {
    fn matches(&self, query: QueryType) -> bool {
        matches!(
            (self, query),
            (_, QueryType::Any)
                | (RecordData::A(_), QueryType::A)
                | (RecordData::Aaaa(_), QueryType::Aaaa)
                | (RecordData::Srv { .. }, QueryType::Srv)
                | (RecordData::Txt(_), QueryType::Txt)
        )
    }
}

/// The answer to one question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The name exists; its records of the asked type (none: NODATA).
    Records(Vec<RecordData>),
    /// The name does not exist in the zone (NXDOMAIN).
    NxDomain { zone: &'static str },
    /// Not a zone this server serves (REFUSED).
    Refused,
}

/// Every name of both zones and its records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DnsTable {
    names: HashMap<String, Vec<RecordData>>,
    /// Names with no records of their own but names below them.
    ancestors: HashSet<String>,
}

fn address(ip: &str) -> Option<RecordData> {
    match ip.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some(RecordData::A(v4)),
        IpAddr::V6(v6) => Some(RecordData::Aaaa(v6)),
    }
}

fn protocol(port: &Value) -> String {
    match meta::str_at(port, "/protocol") {
        "" => "tcp".into(),
        other => other.to_ascii_lowercase(),
    }
}

fn port_number(port: &Value, field: &str) -> Option<u16> {
    port.get(field)
        .and_then(Value::as_i64)
        .and_then(|p| u16::try_from(p).ok())
}

/// A label fit for a DNS name: lower case, anything but letters, digits and `-` turned into `-`.
fn label(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// A ready endpoint of a slice: its hostname and addresses.
struct Endpoint {
    hostname: String,
    addresses: Vec<RecordData>,
}

fn ready_endpoints(slice: &Value) -> Vec<Endpoint> {
    slice
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false))
        .map(|e| {
            let hostname = match meta::str_at(e, "/hostname") {
                "" => meta::str_at(e, "/targetRef/name"),
                named => named,
            };
            let addresses = e
                .get("addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter_map(address)
                .collect();
            Endpoint {
                hostname: label(hostname),
                addresses,
            }
        })
        .collect()
}

/// (name, protocol, port) of a slice's named ports.
fn slice_ports(slice: &Value) -> Vec<(String, String, u16)> {
    slice
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| !meta::str_at(p, "/name").is_empty())
        .filter_map(|p| {
            Some((
                label(meta::str_at(p, "/name")),
                protocol(p),
                port_number(p, "port")?,
            ))
        })
        .collect()
}

impl DnsTable {
    fn add(&mut self, name: String, record: RecordData) {
        let records = self.names.entry(name).or_default();
        if !records.contains(&record) {
            records.push(record);
        }
    }

    /// Adds a headless name: every ready endpoint of `slices` under `base`, each also under its own hostname
    /// (below `per_endpoint(slice)`), and SRV records per named port and endpoint.
    fn add_endpoints<'a>(
        &mut self,
        base: &str,
        slices: impl Iterator<Item = &'a Value>,
        per_endpoint: impl Fn(&Value) -> Option<String>,
    ) {
        for slice in slices {
            let Some(parent) = per_endpoint(slice) else {
                continue;
            };
            let ports = slice_ports(slice);
            for endpoint in ready_endpoints(slice) {
                for record in &endpoint.addresses {
                    self.add(base.to_string(), record.clone());
                }
                if endpoint.hostname.is_empty() {
                    continue;
                }
                let own = format!("{}.{parent}", endpoint.hostname);
                for record in &endpoint.addresses {
                    self.add(own.clone(), record.clone());
                }
                for (name, proto, port) in &ports {
                    self.add(
                        format!("_{name}._{proto}.{base}"),
                        RecordData::Srv {
                            priority: 0,
                            weight: 100,
                            port: *port,
                            target: format!("{own}."),
                        },
                    );
                }
            }
        }
    }

    /// The records `objects` call for.
    pub fn build(objects: &Objects) -> Self {
        let mut table = DnsTable::default();
        for zone in ZONES {
            let version = if zone == CLUSTER_ZONE {
                "1.1.0"
            } else {
                "1.0.0"
            };
            table.add(
                format!("dns-version.{zone}"),
                RecordData::Txt(version.into()),
            );
        }
        for service in objects.list("Service") {
            let (namespace, name) = (meta::namespace(service), meta::name(service));
            if meta::str_at(service, "/spec/type") == "ExternalName" {
                continue;
            }
            let base = format!("{name}.{namespace}.svc.{CLUSTER_ZONE}");
            let cluster_ip = meta::str_at(service, "/spec/clusterIP");
            if cluster_ip == "None" {
                let slices = objects.list_in("EndpointSlice", namespace).filter(|slice| {
                    meta::labels(slice)
                        .get(SERVICE_NAME_LABEL)
                        .and_then(Value::as_str)
                        == Some(name)
                });
                table.add_endpoints(&base, slices, |_| Some(base.clone()));
                continue;
            }
            let ips: Vec<&str> = match service
                .pointer("/spec/clusterIPs")
                .and_then(Value::as_array)
            {
                Some(ips) if !ips.is_empty() => ips.iter().filter_map(Value::as_str).collect(),
                _ => vec![cluster_ip],
            };
            let records: Vec<RecordData> = ips.into_iter().filter_map(address).collect();
            if records.is_empty() {
                continue;
            }
            for record in records {
                table.add(base.clone(), record);
            }
            table.add_service_srv(&base, service.pointer("/spec/ports"));
        }
        for import in objects.list("ServiceImport") {
            let (namespace, name) = (meta::namespace(import), meta::name(import));
            let base = format!("{name}.{namespace}.svc.{CLUSTERSET_ZONE}");
            if meta::str_at(import, "/spec/type") == "Headless" {
                let slices = import_slices(objects, namespace, name);
                table.add_endpoints(&base, slices, |slice| {
                    let cluster = meta::annotation(slice, PROVISION_CLUSTER_ANNOTATION)?;
                    Some(format!("{}.{base}", label(cluster)))
                });
                continue;
            }
            // The name exists from the moment the import does; its address once the cluster gave it one.
            table.names.entry(base.clone()).or_default();
            for ip in import
                .pointer("/spec/ips")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(record) = address(ip) {
                    table.add(base.clone(), record);
                }
            }
            table.add_service_srv(&base, import.pointer("/spec/ports"));
        }
        table.index_ancestors();
        table
    }

    /// SRV records of a Service or import with a virtual IP: one per named port, pointing at `base`.
    fn add_service_srv(&mut self, base: &str, ports: Option<&Value>) {
        for port in ports.and_then(Value::as_array).into_iter().flatten() {
            let name = meta::str_at(port, "/name");
            let Some(number) = port_number(port, "port") else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            self.add(
                format!("_{}._{}.{base}", label(name), protocol(port)),
                RecordData::Srv {
                    priority: 0,
                    weight: 100,
                    port: number,
                    target: format!("{base}."),
                },
            );
        }
    }

    fn index_ancestors(&mut self) {
        let mut ancestors = BTreeSet::new();
        for name in self.names.keys() {
            let mut rest = name.as_str();
            while let Some((_, parent)) = rest.split_once('.') {
                ancestors.insert(parent.to_string());
                rest = parent;
            }
        }
        self.ancestors = ancestors.into_iter().collect();
    }

    /// How many names the table holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The answer to `name` (any case, with or without the final dot) of type `query`.
    pub fn lookup(&self, name: &str, query: QueryType) -> Answer {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let Some(zone) = zone_of(&name) else {
            return Answer::Refused;
        };
        match self.names.get(&name) {
            Some(records) => Answer::Records(
                records
                    .iter()
                    .filter(|r| r.matches(query))
                    .cloned()
                    .collect(),
            ),
            None if name == zone || self.ancestors.contains(&name) => Answer::Records(Vec::new()),
            None => Answer::NxDomain { zone },
        }
    }
}

/// The served zone `name` (lower case, no final dot) is in.
pub fn zone_of(name: &str) -> Option<&'static str> {
    ZONES.into_iter().find(|zone| {
        name == *zone
            || name
                .strip_suffix(zone)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
