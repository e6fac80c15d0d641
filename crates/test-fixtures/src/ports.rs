//! Free loopback ports, for tests that start a server on a port they choose or need one nothing listens on. A
//! port is free when picked; another process may still take it before the test binds it. (Product code picks
//! its ports with `store_etcd::launch::free_loopback_ports`: this crate is for tests only.)

use std::net::TcpListener;

/// `count` distinct loopback ports, each free when picked: all are held until every one is, so none repeats.
pub fn free_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("binding a free loopback port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("a bound listener's address").port())
        .collect()
}

/// One loopback port, free when picked.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_and_bindable() {
        let ports = free_ports(8);
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            TcpListener::bind(("127.0.0.1", port)).expect("a picked port is bindable");
        }
    }
}
