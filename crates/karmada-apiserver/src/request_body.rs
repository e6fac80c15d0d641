//! Reading a request body under the server's size limit, with the same `413` Status whichever
//! HTTP version carried it.
//!
//! Over HTTP/2 a body left unread when the answer is sent makes the stream end in a reset
//! (the peer is still sending), and a client may then drop the answer with it: the 413 never
//! arrives. So an HTTP/2 body over the limit is read to its end and thrown away before
//! answering, up to [`DRAIN_LIMIT`] more bytes and [`DRAIN_TIMEOUT`]; a client sending more than
//! that gets the reset. HTTP/1.1 needs none of this: the connection is closed after the answer.

use std::time::Duration;

use apimachinery::ApiError;
use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Version, header};
use http_body_util::BodyExt;

/// Bytes of an oversized HTTP/2 body read and discarded so the 413 can be delivered.
pub const DRAIN_LIMIT: usize = 64 * 1024 * 1024;
/// How long discarding an oversized body may take.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// The whole body, or kube-apiserver's 413 when it is over `limit` bytes (declared or sent).
pub async fn read_limited(
    body: Body,
    limit: usize,
    version: Version,
    headers: &HeaderMap,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let mut body = body;
    if declared.is_none_or(|length| length <= limit) {
        let mut collected = BytesMut::new();
        let mut over = false;
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
            if let Ok(data) = frame.into_data() {
                collected.extend_from_slice(&data);
                if collected.len() > limit {
                    over = true;
                    break;
                }
            }
        }
        if !over {
            return Ok(collected.freeze());
        }
    }
    if version == Version::HTTP_2 {
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain(body)).await;
    }
    Err(ApiError::request_entity_too_large(limit))
}

/// Reads and discards up to [`DRAIN_LIMIT`] bytes, until the body ends.
async fn drain(mut body: Body) {
    let mut discarded = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            discarded += data.len();
            if discarded > DRAIN_LIMIT {
                return;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn length(n: usize) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, n.to_string().parse().unwrap());
        headers
    }

    #[tokio::test]
    async fn bodies_up_to_the_limit_pass_and_larger_ones_are_413() {
        for version in [Version::HTTP_11, Version::HTTP_2] {
            let ok = read_limited(Body::from("abcd"), 4, version, &HeaderMap::new())
                .await
                .unwrap();
            assert_eq!(ok, "abcd");
            let sent = read_limited(Body::from("abcde"), 4, version, &HeaderMap::new())
                .await
                .unwrap_err();
            assert_eq!(sent.code, 413);
            let declared = read_limited(Body::from("abcde"), 4, version, &length(5))
                .await
                .unwrap_err();
            assert_eq!(declared, sent);
        }
    }
}
