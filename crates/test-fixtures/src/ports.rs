//! Free loopback ports, for tests that start a server on a port they choose or need one nothing listens on.
//! (Product code picks its ports with `store_etcd::launch::free_loopback_ports`: this crate is for tests only.)
//!
//! Two things can take a port between the pick and the server's bind, and both failed CI runs:
//! - an outgoing connection: the kernel gives those local ports from the ephemeral range, the same range a
//!   bind to port 0 draws from. Ports here come from below that range, which outgoing connections never use.
//! - another test process picking the same port: each pick is reserved with a file created exclusively in a
//!   directory all test processes share, so no two live tests hold one port. A reservation older than
//!   [`RESERVATION_LIFETIME`] is stale (its test is long over) and is taken over.

use std::fs::OpenOptions;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Ports below this are left alone (well-known and registered services people run by hand).
const LOWEST: u16 = 15_000;
/// The Linux default start of the ephemeral range, used when `/proc` does not say.
const DEFAULT_EPHEMERAL_START: u16 = 32_768;
/// Longer than any test runs.
const RESERVATION_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// `count` distinct loopback ports, each free when picked and reserved against other test processes.
pub fn free_ports(count: usize) -> Vec<u16> {
    let (low, high) = candidate_range();
    let span = u32::from(high - low);
    let dir = reservations_dir();
    std::fs::create_dir_all(&dir).expect("creating the test port reservation directory");
    let mut cursor = seed() % span;
    let mut picked = Vec::with_capacity(count);
    // Each candidate is visited at most once per call, so a crowded range fails instead of spinning.
    for _ in 0..span {
        if picked.len() == count {
            break;
        }
        cursor = (cursor + 1) % span;
        let port = low + u16::try_from(cursor).expect("the span fits a port");
        if bindable(port) && reserve(&dir, port) {
            picked.push(port);
        }
    }
    assert_eq!(
        picked.len(),
        count,
        "no {count} free loopback ports between {low} and {high}"
    );
    picked
}

/// One loopback port, free when picked.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `[LOWEST, start of the ephemeral range)`.
fn candidate_range() -> (u16, u16) {
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_START);
    assert!(
        ephemeral_start > LOWEST + 1_000,
        "the ephemeral port range starts at {ephemeral_start}; the tests need ports {LOWEST}..{DEFAULT_EPHEMERAL_START} \
         outside it: sysctl -w net.ipv4.ip_local_port_range=\"{DEFAULT_EPHEMERAL_START} 60999\""
    );
    (LOWEST, ephemeral_start)
}

fn reservations_dir() -> PathBuf {
    std::env::temp_dir().join("karmada-rs-test-ports")
}

/// Differs between processes and between calls, so concurrent tests start their scans far apart.
fn seed() -> u32 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    nanos ^ std::process::id().wrapping_mul(2_654_435_761)
}

fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Creates the port's reservation file; takes over one left by a test long finished.
fn reserve(dir: &std::path::Path, port: u16) -> bool {
    let path = dir.join(port.to_string());
    let create = || OpenOptions::new().write(true).create_new(true).open(&path);
    if create().is_ok() {
        return true;
    }
    let stale = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age > RESERVATION_LIFETIME);
    // Two takers of one stale file: only one `create_new` after the removal succeeds.
    stale && std::fs::remove_file(&path).is_ok() && create().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_outside_the_ephemeral_range() {
        let (_, ephemeral_start) = candidate_range();
        let ports = free_ports(8);
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert!(
                (LOWEST..ephemeral_start).contains(&port),
                "{port} is outside {LOWEST}..{ephemeral_start}"
            );
            TcpListener::bind(("127.0.0.1", port)).expect("a picked port is bindable");
        }
    }

    #[test]
    fn a_reserved_port_is_not_picked_again_while_its_reservation_is_fresh() {
        let first = free_ports(64);
        let second = free_ports(64);
        let overlap: Vec<&u16> = first.iter().filter(|p| second.contains(p)).collect();
        assert!(overlap.is_empty(), "picked twice: {overlap:?}");
    }

    #[test]
    fn a_stale_reservation_is_taken_over_and_a_fresh_one_is_not() {
        let dir = tempfile_dir();
        assert!(reserve(&dir, 20_000), "an unreserved port is reserved");
        assert!(!reserve(&dir, 20_000), "a fresh reservation holds");
        let file = std::fs::File::options()
            .write(true)
            .open(dir.join("20000"))
            .expect("the reservation file");
        let long_ago = SystemTime::now() - RESERVATION_LIFETIME - Duration::from_secs(60);
        file.set_modified(long_ago)
            .expect("backdating the reservation");
        assert!(reserve(&dir, 20_000), "a stale reservation is taken over");
        assert!(!reserve(&dir, 20_000), "the taken-over reservation holds");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "karmada-rs-port-reservation-test-{}-{}",
            std::process::id(),
            seed()
        ));
        std::fs::create_dir_all(&dir).expect("test directory");
        dir
    }
}
