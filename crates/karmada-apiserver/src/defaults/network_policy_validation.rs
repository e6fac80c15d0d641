//! kube-apiserver v1.32's NetworkPolicy rules: selectors, rule ports, peers and their IP
//! blocks, and policy types, with its field paths and messages. CIDRs are parsed as Kubernetes'
//! "sloppy" parser does (IPv4 octets may have leading zeros; host bits may be set).

use std::net::Ipv6Addr;

use serde_json::{Map, Value};

use apimachinery::{FieldError, LabelSelector};

use super::rules::{PORT_RANGE, iana_service_name_problems};

const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];
const POLICY_TYPES: [&str; 2] = ["Ingress", "Egress"];
const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

pub fn validate_network_policy(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    if let Some(selector) = spec.get("podSelector") {
        validate_selector(selector, "spec.podSelector", errors);
    }
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (index, rule) in list(spec.get(direction)).iter().enumerate() {
            let path = format!("spec.{direction}[{index}]");
            for (index, port) in list(rule.get("ports")).iter().enumerate() {
                validate_port(port, &format!("{path}.ports[{index}]"), errors);
            }
            for (index, peer) in list(rule.get(peers)).iter().enumerate() {
                validate_peer(peer, &format!("{path}.{peers}[{index}]"), errors);
            }
        }
    }
    let types = list(spec.get("policyTypes"));
    if types.len() > POLICY_TYPES.len() {
        errors.push(FieldError::invalid(
            "spec.policyTypes",
            Value::Array(types.to_vec()),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (index, policy_type) in types.iter().enumerate() {
        if !policy_type
            .as_str()
            .is_some_and(|t| POLICY_TYPES.contains(&t))
        {
            errors.push(FieldError::not_supported(
                format!("spec.policyTypes[{index}]"),
                policy_type.clone(),
                &POLICY_TYPES,
            ));
        }
    }
}

fn list(value: Option<&Value>) -> &[Value] {
    value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn validate_selector(selector: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Err(error) = LabelSelector::from_label_selector(selector) {
        errors.push(FieldError::invalid(path, selector.clone(), error.message));
    }
}

/// Protocol, port (a number or a named port) and an end port only after a numeric port.
fn validate_port(port: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(protocol) = port.get("protocol").filter(|p| !p.is_null())
        && !protocol.as_str().is_some_and(|p| PROTOCOLS.contains(&p))
    {
        errors.push(FieldError::not_supported(
            format!("{path}.protocol"),
            protocol.clone(),
            &PROTOCOLS,
        ));
    }
    let end_port = port.get("endPort").and_then(Value::as_i64);
    let end_field = format!("{path}.endPort");
    match port.get("port").filter(|p| !p.is_null()) {
        Some(Value::String(name)) => {
            if let Some(end) = end_port {
                errors.push(FieldError::invalid(
                    end_field,
                    Value::from(end),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for problem in iana_service_name_problems(name) {
                errors.push(FieldError::invalid(
                    format!("{path}.port"),
                    Value::String(name.clone()),
                    problem,
                ));
            }
        }
        Some(number) => {
            let number = number.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&number) {
                errors.push(FieldError::invalid(
                    format!("{path}.port"),
                    Value::from(number),
                    PORT_RANGE,
                ));
            }
            if let Some(end) = end_port {
                if end < number {
                    errors.push(FieldError::invalid(
                        end_field.clone(),
                        Value::from(end),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&end) {
                    errors.push(FieldError::invalid(end_field, Value::from(end), PORT_RANGE));
                }
            }
        }
        None => {
            if let Some(end) = end_port {
                errors.push(FieldError::invalid(
                    end_field,
                    Value::from(end),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

/// A peer names pods, namespaces or an IP block; an IP block stands alone.
fn validate_peer(peer: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let mut count = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(selector) = peer.get(key).filter(|s| !s.is_null()) {
            count += 1;
            validate_selector(selector, &format!("{path}.{key}"), errors);
        }
    }
    let ip_block = peer.get("ipBlock").filter(|b| !b.is_null());
    if let Some(block) = ip_block {
        count += 1;
        validate_ip_block(block, &format!("{path}.ipBlock"), errors);
    }
    if count == 0 {
        errors.push(FieldError::required(path, "must specify a peer"));
    } else if count > 1 && ip_block.is_some() {
        errors.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

/// `cidr` is a valid block and every `except` entry a strictly smaller block inside it.
fn validate_ip_block(block: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let cidr_text = block
        .get("cidr")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if cidr_text.is_empty() {
        errors.push(FieldError::required(format!("{path}.cidr"), ""));
        return;
    }
    let Some(cidr) = Cidr::parse(cidr_text) else {
        errors.push(FieldError::invalid(
            format!("{path}.cidr"),
            Value::String(cidr_text.to_string()),
            INVALID_CIDR,
        ));
        return;
    };
    for (index, except) in list(block.get("except")).iter().enumerate() {
        let field = format!("{path}.except[{index}]");
        let except_text = except.as_str().unwrap_or_default();
        match Cidr::parse(except_text) {
            None => errors.push(FieldError::invalid(field, except.clone(), INVALID_CIDR)),
            Some(inner) if !cidr.strictly_contains(&inner) => errors.push(FieldError::invalid(
                field,
                except.clone(),
                "must be a strict subset of `cidr`",
            )),
            Some(_) => {}
        }
    }
}

/// An address block: network bits (host bits cleared), address width in bits, prefix length.
#[derive(Debug, PartialEq)]
struct Cidr {
    network: u128,
    width: u32,
    prefix: u32,
}

impl Cidr {
    fn parse(text: &str) -> Option<Self> {
        let (address, prefix) = text.split_once('/')?;
        if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let prefix: u32 = prefix.parse().ok()?;
        // Like Go, an address without ':' is IPv4 and anything else IPv6.
        let (bits, width) = if address.contains(':') {
            (u128::from(address.parse::<Ipv6Addr>().ok()?), 128)
        } else {
            (u128::from(parse_ipv4(address)?), 32)
        };
        (prefix <= width).then(|| Self {
            network: bits & mask(width, prefix),
            width,
            prefix,
        })
    }

    fn strictly_contains(&self, inner: &Self) -> bool {
        self.width == inner.width
            && self.prefix < inner.prefix
            && inner.network & mask(self.width, self.prefix) == self.network
    }
}

fn mask(width: u32, prefix: u32) -> u128 {
    if prefix == 0 {
        0
    } else {
        (u128::MAX >> (128 - prefix)) << (width - prefix)
    }
}

/// Dotted-quad IPv4, leading zeros allowed.
fn parse_ipv4(text: &str) -> Option<u32> {
    let octets: Vec<&str> = text.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    octets.iter().try_fold(0u32, |bits, octet| {
        if octet.is_empty() || octet.len() > 3 || !octet.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let value: u32 = octet.parse().ok().filter(|v| *v <= 255)?;
        Some(bits << 8 | value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_and_nest_like_kubernetes() {
        for good in [
            "10.0.0.0/8",
            "10.0.0.1/24",
            "010.0.0.0/8",
            "0.0.0.0/0",
            "2001:db8::/64",
        ] {
            assert!(Cidr::parse(good).is_some(), "{good}");
        }
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0/8",
            "256.0.0.0/8",
            "2001:db8::/129",
            "x/8",
        ] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
        let outer = Cidr::parse("10.0.0.0/16");
        let inside = Cidr::parse("10.0.1.0/24");
        let outside = Cidr::parse("10.1.0.0/24");
        let same = Cidr::parse("10.0.5.5/16");
        let v6 = Cidr::parse("::/120");
        let (Some(outer), Some(inside), Some(outside), Some(same), Some(v6)) =
            (outer, inside, outside, same, v6)
        else {
            panic!("fixtures must parse");
        };
        assert!(outer.strictly_contains(&inside));
        assert!(!outer.strictly_contains(&outside));
        assert!(!outer.strictly_contains(&same));
        assert!(!outer.strictly_contains(&v6));
    }
}
