//! `pods/portforward`: every port of a simulated pod echoes what it receives. Three forms:
//! - WebSocket tunnelling SPDY (`SPDY/3.1+portforward.k8s.io`), kubectl 1.32's first choice;
//! - `POST` + `Upgrade: SPDY/3.1`, kubectl's fallback (and older kubectls' only form);
//! - the WebSocket channel form (`v4.channel.k8s.io`, ports in the query): port i's data on
//!   channel 2i, its errors on 2i+1, each channel's first message the port (2 bytes, little
//!   endian); the Python client's form.
//!
//! SPDY: each forwarded connection is a pair of client-opened streams (`streamtype: error` and
//! `streamtype: data`, same `requestid`); both get a SYN_REPLY. Data is echoed on its stream;
//! when the client half-closes the data stream, the server closes the data stream and then the
//! error stream, which tells the client the connection is over without an error.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::ApiError;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use hyper_util::rt::TokioIo;
use karmada_apiserver::ApiServer;
use karmada_apiserver::respond::error_response;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::spdy::{Codec, Frame, PROTOCOL_ERROR};
use super::{admit, first, is_websocket, offered_protocols, query_pairs, until_stopped};
use crate::meta;

const TUNNELLED_SPDY: &str = "SPDY/3.1+portforward.k8s.io";
const PORT_FORWARD_PROTOCOL: &str = "portforward.k8s.io";
const CHANNEL_V4: &str = "v4.channel.k8s.io";
/// Bytes read from an upgraded connection at a time.
const READ_CHUNK: usize = 32 * 1024;

pub async fn serve(
    State(server): State<Arc<ApiServer>>,
    Path((namespace, name)): Path<(String, String)>,
    request: Request,
) -> Response {
    start(server, namespace, name, request)
        .await
        .unwrap_or_else(|e| error_response(&e))
}

async fn start(
    server: Arc<ApiServer>,
    namespace: String,
    name: String,
    request: Request,
) -> Result<Response, ApiError> {
    let (mut parts, _body) = request.into_parts();
    let pod = admit(&server, &parts, &namespace, &name, "portforward").await?;
    if meta::str_at(&pod, "/status/phase") != "Running" {
        return Err(ApiError::bad_request(format!(
            "unable to forward port because pod is not running. Current status={}",
            meta::str_at(&pod, "/status/phase")
        )));
    }
    let query = query_pairs(&parts);
    if is_websocket(&parts.headers) {
        let offered = offered_protocols(&parts.headers);
        let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &())
            .await
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        if offered.iter().any(|p| p == TUNNELLED_SPDY) {
            return Ok(upgrade
                .protocols([TUNNELLED_SPDY])
                .on_upgrade(move |socket| async move {
                    until_stopped(
                        &server,
                        spdy_session(Transport::WebSocket(Box::new(socket))),
                    )
                    .await
                }));
        }
        if offered.iter().any(|p| p == CHANNEL_V4) {
            let ports = ports(first(&query, "ports").unwrap_or_default())?;
            return Ok(upgrade
                .protocols([CHANNEL_V4])
                .on_upgrade(move |socket| async move {
                    until_stopped(&server, channel_session(socket, ports)).await
                }));
        }
        return Err(ApiError::bad_request(format!(
            "port-forward over WebSocket takes subprotocol {TUNNELLED_SPDY} or {CHANNEL_V4}; offered: [{}]",
            offered.join(", ")
        )));
    }
    let spdy = parts
        .headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("SPDY/3.1"));
    let offers_port_forward = parts
        .headers
        .get_all("X-Stream-Protocol-Version")
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v == PORT_FORWARD_PROTOCOL));
    if !(spdy && offers_port_forward) {
        return Err(ApiError::bad_request(format!(
            "port-forward needs an upgrade: WebSocket ({TUNNELLED_SPDY} or {CHANNEL_V4}) or Upgrade: SPDY/3.1 with X-Stream-Protocol-Version: {PORT_FORWARD_PROTOCOL}"
        )));
    }
    let on_upgrade = parts
        .extensions
        .remove::<hyper::upgrade::OnUpgrade>()
        .ok_or_else(|| {
            ApiError::bad_request("this connection can not be upgraded (HTTP/1.1 only)")
        })?;
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                let session = spdy_session(Transport::Upgraded(TokioIo::new(upgraded)));
                until_stopped(&server, session).await
            }
            Err(error) => tracing::debug!(%error, "port-forward upgrade failed"),
        }
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    headers.insert(
        "X-Stream-Protocol-Version",
        HeaderValue::from_static(PORT_FORWARD_PROTOCOL),
    );
    Ok(response)
}

/// `ports=80,8080` (also repeated `ports=`), as the kubelet accepts them.
fn ports(text: &str) -> Result<Vec<u16>, ApiError> {
    let ports: Vec<u16> = text
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "unable to parse \"{p}\" as a port: ports=80,8080 takes numbers from 1 to 65535"
                    ))
                })
        })
        .collect::<Result<_, _>>()?;
    if ports.is_empty() {
        return Err(ApiError::bad_request(
            "query parameter \"ports\" is required, e.g. ports=80,8080",
        ));
    }
    Ok(ports)
}

/// The WebSocket channel form: echo on each data channel.
async fn channel_session(mut socket: WebSocket, ports: Vec<u16>) {
    for (index, port) in ports.iter().enumerate() {
        for channel in [2 * index, 2 * index + 1] {
            let [low, high] = port.to_le_bytes();
            let message = vec![channel as u8, low, high];
            if socket.send(Message::Binary(message.into())).await.is_err() {
                return;
            }
        }
    }
    while let Some(Ok(message)) = socket.recv().await {
        let data = match message {
            Message::Binary(data) => data,
            // Channel bytes may come as text frames too; kube-apiserver reads both.
            Message::Text(text) => axum::body::Bytes::copy_from_slice(text.as_bytes()),
            Message::Close(_) => return,
            _ => continue,
        };
        let Some(&channel) = data.first() else {
            continue;
        };
        if usize::from(channel) < 2 * ports.len()
            && channel % 2 == 0
            && data.len() > 1
            && socket.send(Message::Binary(data)).await.is_err()
        {
            return;
        }
    }
}

/// The byte stream SPDY runs on.
enum Transport {
    /// Binary messages of a WebSocket, concatenated.
    WebSocket(Box<WebSocket>),
    Upgraded(TokioIo<hyper::upgrade::Upgraded>),
}

impl Transport {
    /// The next bytes; `None` at the end.
    async fn read(&mut self) -> Option<Vec<u8>> {
        match self {
            Transport::WebSocket(socket) => loop {
                match socket.recv().await? {
                    Ok(Message::Binary(data)) => return Some(data.to_vec()),
                    Ok(Message::Close(_)) | Err(_) => return None,
                    Ok(_) => {}
                }
            },
            Transport::Upgraded(io) => {
                let mut buffer = vec![0; READ_CHUNK];
                match io.read(&mut buffer).await {
                    Ok(0) | Err(_) => None,
                    Ok(n) => {
                        buffer.truncate(n);
                        Some(buffer)
                    }
                }
            }
        }
    }

    async fn write(&mut self, bytes: Vec<u8>) -> bool {
        match self {
            Transport::WebSocket(socket) => {
                socket.send(Message::Binary(bytes.into())).await.is_ok()
            }
            Transport::Upgraded(io) => {
                io.write_all(&bytes).await.is_ok() && io.flush().await.is_ok()
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamType {
    Error,
    Data,
}

/// A port-forward SPDY connection: streams by id, and each request's error stream.
#[derive(Default)]
struct Streams {
    kinds: HashMap<u32, (StreamType, String)>,
    error_stream_of: HashMap<String, u32>,
}

/// The frames answering one incoming frame.
fn answer(streams: &mut Streams, frame: Frame) -> Vec<Frame> {
    match frame {
        Frame::SynStream {
            stream_id, headers, ..
        } => {
            let header = |name: &str| {
                headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let kind = match header("streamtype").as_str() {
                "error" => StreamType::Error,
                "data" => StreamType::Data,
                _ => {
                    return vec![Frame::RstStream {
                        stream_id,
                        status: PROTOCOL_ERROR,
                    }];
                }
            };
            let request = header("requestid");
            if kind == StreamType::Error {
                streams.error_stream_of.insert(request.clone(), stream_id);
            }
            streams.kinds.insert(stream_id, (kind, request));
            vec![Frame::SynReply {
                stream_id,
                fin: false,
                headers: Vec::new(),
            }]
        }
        Frame::Data {
            stream_id,
            fin,
            data,
        } => {
            let Some((kind, request)) = streams.kinds.get(&stream_id).cloned() else {
                return Vec::new();
            };
            let mut out = Vec::new();
            if kind == StreamType::Data {
                if !data.is_empty() {
                    out.push(Frame::WindowUpdate {
                        stream_id,
                        delta: data.len() as u32,
                    });
                    out.push(Frame::Data {
                        stream_id,
                        fin: false,
                        data,
                    });
                }
                if fin {
                    out.push(Frame::Data {
                        stream_id,
                        fin: true,
                        data: Vec::new(),
                    });
                    streams.kinds.remove(&stream_id);
                    if let Some(error_stream) = streams.error_stream_of.remove(&request) {
                        streams.kinds.remove(&error_stream);
                        out.push(Frame::Data {
                            stream_id: error_stream,
                            fin: true,
                            data: Vec::new(),
                        });
                    }
                }
            }
            out
        }
        Frame::RstStream { stream_id, .. } => {
            if let Some((_, request)) = streams.kinds.remove(&stream_id) {
                streams
                    .error_stream_of
                    .retain(|r, id| *r != request || *id != stream_id);
            }
            Vec::new()
        }
        Frame::Ping(id) => vec![Frame::Ping(id)],
        _ => Vec::new(),
    }
}

async fn spdy_session(mut transport: Transport) {
    let mut codec = Codec::new();
    let mut streams = Streams::default();
    let mut buffer = Vec::new();
    while let Some(bytes) = transport.read().await {
        buffer.extend_from_slice(&bytes);
        loop {
            let frame = match codec.decode(&mut buffer) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(%error, "port-forward: ending the SPDY connection");
                    return;
                }
            };
            if matches!(frame, Frame::GoAway { .. }) {
                return;
            }
            let mut out = Vec::new();
            for reply in answer(&mut streams, frame) {
                match codec.encode(&reply) {
                    Ok(bytes) => out.extend(bytes),
                    Err(error) => {
                        tracing::debug!(%error, "port-forward: encoding a frame");
                        return;
                    }
                }
            }
            if !out.is_empty() && !transport.write(out).await {
                return;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn syn(id: u32, kind: &str, request: &str) -> Frame {
        Frame::SynStream {
            stream_id: id,
            fin: false,
            headers: vec![
                ("streamtype".into(), kind.into()),
                ("port".into(), "80".into()),
                ("requestid".into(), request.into()),
            ],
        }
    }

    #[test]
    fn a_forwarded_connection_echoes_then_closes_both_streams() {
        let mut streams = Streams::default();
        let reply = |id| Frame::SynReply {
            stream_id: id,
            fin: false,
            headers: vec![],
        };
        assert_eq!(answer(&mut streams, syn(1, "error", "0")), [reply(1)]);
        // The client half-closes its error stream at once: nothing to answer.
        let client_fin = |id| Frame::Data {
            stream_id: id,
            fin: true,
            data: vec![],
        };
        assert_eq!(answer(&mut streams, client_fin(1)), []);
        assert_eq!(answer(&mut streams, syn(3, "data", "0")), [reply(3)]);
        let data = Frame::Data {
            stream_id: 3,
            fin: false,
            data: b"ping".to_vec(),
        };
        assert_eq!(
            answer(&mut streams, data.clone()),
            [
                Frame::WindowUpdate {
                    stream_id: 3,
                    delta: 4
                },
                data
            ]
        );
        let server_fin = |id| Frame::Data {
            stream_id: id,
            fin: true,
            data: vec![],
        };
        assert_eq!(
            answer(&mut streams, client_fin(3)),
            [server_fin(3), server_fin(1)]
        );
        assert!(streams.kinds.is_empty());
        assert_eq!(answer(&mut streams, Frame::Ping(9)), [Frame::Ping(9)]);
        assert_eq!(
            answer(&mut streams, syn(5, "bogus", "1")),
            [Frame::RstStream {
                stream_id: 5,
                status: PROTOCOL_ERROR
            }]
        );
    }

    #[test]
    fn ports_parse_as_the_kubelet_takes_them() {
        assert_eq!(ports("80,8080").unwrap(), [80, 8080]);
        assert!(ports("").unwrap_err().message.contains("is required"));
        assert!(ports("0").unwrap_err().message.contains("\"0\""));
        assert!(ports("http").is_err());
    }
}
