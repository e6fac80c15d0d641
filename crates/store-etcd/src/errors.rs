//! Classifies etcd's errors. etcd reports revision problems only as gRPC status messages
//! (`etcdserver: mvcc: required revision has been compacted`), so the match is on that text,
//! which has been stable across etcd 3.x.

use store::StoreError;

/// What an etcd error means for a read or write at some revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The requested revision is below etcd's compacted revision.
    Compacted,
    /// The requested revision is above etcd's current revision.
    FutureRevision,
    /// Anything else: unreachable cluster, timeouts, oversized requests...
    Other,
}

const COMPACTED: &str = "required revision has been compacted";
const FUTURE: &str = "required revision is a future revision";

/// The kind of an etcd client error.
pub fn kind(error: &etcd_client::Error) -> Kind {
    classify(&error.to_string())
}

fn classify(message: &str) -> Kind {
    if message.contains(COMPACTED) {
        Kind::Compacted
    } else if message.contains(FUTURE) {
        Kind::FutureRevision
    } else {
        Kind::Other
    }
}

/// A [`StoreError::Backend`] naming the cluster.
pub fn backend(endpoints: &str, error: etcd_client::Error) -> StoreError {
    StoreError::Backend(format!("etcd {endpoints}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_classify_by_etcd_wording() {
        let cases = [
            (
                "grpc request error: status: OutOfRange, message: \"etcdserver: mvcc: required revision has been compacted\"",
                Kind::Compacted,
            ),
            (
                "status: OutOfRange, message: \"etcdserver: mvcc: required revision is a future revision\"",
                Kind::FutureRevision,
            ),
            ("transport error", Kind::Other),
            ("", Kind::Other),
        ];
        for (message, want) in cases {
            assert_eq!(classify(message), want, "{message}");
        }
    }
}
