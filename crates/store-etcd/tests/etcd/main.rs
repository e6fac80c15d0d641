//! The etcd backend against real etcd processes: the shared conformance suite (one fresh etcd
//! per case, since the suite counts revisions from an empty store and compaction is global to
//! an etcd), then what only this backend has: namespaces, connection and configuration errors,
//! TLS client certificates, snapshots, the raw write rate, and failover in a 3-member cluster.
//! A missing `etcd` binary fails the tests with a pointer to scripts/setup.sh.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod certs;
mod conformance;
mod etcd_specific;
mod failover;
mod harness;
