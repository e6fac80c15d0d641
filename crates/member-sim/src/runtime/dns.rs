//! The cluster's DNS server: `cluster.local` and `clusterset.local` over UDP and TCP on one port, answered from
//! the latest [`DnsTable`] the controller loop published. hickory-server does the protocol: decoding (a
//! malformed query gets FORMERR or is dropped, never a crash), truncation (an answer larger than 512 bytes, or
//! than the client's EDNS size, goes out over UDP with TC set; the client asks again over TCP), TCP framing.
//! This module turns a [`crate::dns::Answer`] into records: authoritative answers, NXDOMAIN and NODATA with the
//! zone's SOA in the authority section, REFUSED for other zones, NOTIMP for anything but a standard query.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Edns, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, SOA, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::dns::{Answer, DnsTable, QueryType, RecordData, TTL};

/// How long an idle TCP connection is kept.
const TCP_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest UDP answer offered to EDNS clients (the DNS flag day's 1232 bytes).
const MAX_UDP_PAYLOAD: u16 = 1232;

/// The latest records, as the controller loop publishes them.
pub type Tables = watch::Receiver<Arc<DnsTable>>;

struct Handler {
    tables: Tables,
}

fn query_type(record_type: RecordType) -> QueryType {
    match record_type {
        RecordType::A => QueryType::A,
        RecordType::AAAA => QueryType::Aaaa,
        RecordType::SRV => QueryType::Srv,
        RecordType::TXT => QueryType::Txt,
        RecordType::ANY => QueryType::Any,
        _ => QueryType::Other,
    }
}

fn rdata(record: &RecordData) -> Option<RData> {
    Some(match record {
        RecordData::A(ip) => RData::A(A(*ip)),
        RecordData::Aaaa(ip) => RData::AAAA(AAAA(*ip)),
        RecordData::Srv {
            priority,
            weight,
            port,
            target,
        } => RData::SRV(SRV::new(
            *priority,
            *weight,
            *port,
            Name::from_ascii(target).ok()?,
        )),
        RecordData::Txt(text) => RData::TXT(TXT::new(vec![text.clone()])),
    })
}

/// The zone's SOA record, as negative answers carry it (its minimum is how long a client caches the absence).
fn soa(zone: &str) -> Option<Record> {
    let origin = Name::from_ascii(format!("{zone}.")).ok()?;
    let data = SOA::new(
        Name::from_ascii(format!("ns.dns.{zone}.")).ok()?,
        Name::from_ascii(format!("hostmaster.{zone}.")).ok()?,
        1,
        7200,
        1800,
        86400,
        TTL,
    );
    Some(Record::from_rdata(origin, TTL, RData::SOA(data)))
}

/// What to answer one request with.
struct Reply {
    code: ResponseCode,
    authoritative: bool,
    answers: Vec<Record>,
    soa: Vec<Record>,
}

impl Reply {
    fn error(code: ResponseCode) -> Self {
        Reply {
            code,
            authoritative: false,
            answers: Vec::new(),
            soa: Vec::new(),
        }
    }
}

impl Handler {
    fn reply(&self, request: &Request) -> Reply {
        if request.metadata.op_code != OpCode::Query {
            return Reply::error(ResponseCode::NotImp);
        }
        let Ok(info) = request.request_info() else {
            return Reply::error(ResponseCode::FormErr);
        };
        let name: Name = info.query.name().clone().into();
        let asked = name.to_ascii();
        let table = self.tables.borrow().clone();
        match table.lookup(&asked, query_type(info.query.query_type())) {
            Answer::Refused => Reply::error(ResponseCode::Refused),
            Answer::NxDomain { zone } => Reply {
                code: ResponseCode::NXDomain,
                authoritative: true,
                answers: Vec::new(),
                soa: soa(zone).into_iter().collect(),
            },
            Answer::Records(records) => {
                let answers: Vec<Record> = records
                    .iter()
                    .filter_map(|r| Some(Record::from_rdata(name.clone(), TTL, rdata(r)?)))
                    .collect();
                // NODATA: the zone's SOA tells how long the absence may be cached.
                let soa = if answers.is_empty() {
                    crate::dns::zone_of(&asked.trim_end_matches('.').to_ascii_lowercase())
                        .and_then(soa)
                        .into_iter()
                        .collect()
                } else {
                    Vec::new()
                };
                Reply {
                    code: ResponseCode::NoError,
                    authoritative: true,
                    answers,
                    soa,
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        mut response: R,
    ) -> ResponseInfo {
        let reply = self.reply(request);
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.response_code = reply.code;
        metadata.authoritative = reply.authoritative;
        let mut builder = MessageResponseBuilder::from_message_request(request);
        let edns = request.edns.as_ref().map(|asked| {
            let mut edns = Edns::new();
            edns.set_max_payload(asked.max_payload().clamp(512, MAX_UDP_PAYLOAD));
            edns
        });
        if let Some(edns) = &edns {
            builder.edns(edns);
        }
        let sent = response
            .send_response(builder.build(metadata, &reply.answers, &[], &reply.soa, &[]))
            .await;
        respond(sent, request)
    }
}

fn respond(
    sent: Result<ResponseInfo, hickory_server::net::NetError>,
    request: &Request,
) -> ResponseInfo {
    sent.unwrap_or_else(|error| {
        tracing::debug!(%error, "sending a DNS answer");
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.response_code = ResponseCode::ServFail;
        ResponseInfo::from(hickory_proto::op::Header {
            metadata,
            counts: Default::default(),
        })
    })
}

/// A serving DNS server.
pub struct DnsServer {
    pub address: SocketAddr,
    server: Server<Handler>,
}

/// Binds UDP and TCP on `address` (port 0: a free port both can have) and serves `tables` until `cancel` fires
/// or [`DnsServer::stop`].
pub async fn serve(
    address: SocketAddr,
    tables: Tables,
    cancel: CancellationToken,
) -> std::io::Result<DnsServer> {
    let (udp, tcp) = bind_pair(address).await?;
    let address = udp.local_addr()?;
    let mut server = Server::new(Handler { tables });
    server.register_socket(udp);
    server.register_listener(tcp, TCP_TIMEOUT, 64);
    let token = server.shutdown_token().clone();
    tokio::spawn(async move {
        cancel.cancelled().await;
        token.cancel();
    });
    Ok(DnsServer { address, server })
}

impl DnsServer {
    /// Stops serving and waits for the server's tasks.
    pub async fn stop(mut self) {
        if let Err(error) = self.server.shutdown_gracefully().await {
            tracing::debug!(%error, "DNS server stopped");
        }
    }
}

/// A UDP socket and a TCP listener on the same port.
async fn bind_pair(address: SocketAddr) -> std::io::Result<(UdpSocket, TcpListener)> {
    let mut last_error = None;
    for _ in 0..20 {
        let udp = UdpSocket::bind(address).await?;
        let port = udp.local_addr()?.port();
        match TcpListener::bind(SocketAddr::new(address.ip(), port)).await {
            Ok(tcp) => return Ok((udp, tcp)),
            // The port is free for UDP but taken for TCP: with port 0, try another.
            Err(error) if address.port() == 0 => last_error = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no port free for both UDP and TCP")))
}
