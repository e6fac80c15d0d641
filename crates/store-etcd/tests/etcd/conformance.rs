//! Every case of `store::conformance` on its own empty etcd, inside a namespace prefix so the
//! prefix mapping is exercised by every case.

use store::conformance::Fixture;
use store_etcd::EtcdStore;

use crate::harness::EtcdServer;

async fn fresh() -> Fixture {
    let server = match EtcdServer::start().await {
        Ok(server) => server,
        Err(error) => panic!("{error:#}"),
    };
    let store = match EtcdStore::connect(server.options("/conformance/")).await {
        Ok(store) => store,
        Err(error) => panic!("connecting to {}: {error}", server.url),
    };
    Fixture::with_guard(store, server)
}

store::conformance_tests!(fresh);
