//! SPDY/3.1 framing, as much of it as a port-forward server needs: frames in both directions
//! and the zlib-compressed header blocks (one compression context per direction for the whole
//! connection; the peer compresses with the protocol's preset dictionary).
//!
//! kubectl 1.32 sends port-forward as SPDY: tunnelled through a WebSocket
//! (`SPDY/3.1+portforward.k8s.io`), or over an HTTP `Upgrade: SPDY/3.1` when that fails.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

pub const VERSION: u16 = 3;
pub const FLAG_FIN: u8 = 0x01;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const WINDOW_UPDATE: u16 = 9;
/// Control and data frames both start with 8 bytes of header.
const FRAME_HEADER: usize = 8;
/// Larger frames are refused (SPDY allows 16 MiB; port-forward clients send 32 KiB chunks).
const MAX_FRAME: usize = 1 << 24;

/// RST_STREAM status codes used here.
pub const PROTOCOL_ERROR: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    SynStream {
        stream_id: u32,
        fin: bool,
        headers: Vec<(String, String)>,
    },
    SynReply {
        stream_id: u32,
        fin: bool,
        headers: Vec<(String, String)>,
    },
    RstStream {
        stream_id: u32,
        status: u32,
    },
    Ping(u32),
    GoAway {
        last_stream_id: u32,
    },
    WindowUpdate {
        stream_id: u32,
        delta: u32,
    },
    Data {
        stream_id: u32,
        fin: bool,
        data: Vec<u8>,
    },
    /// SETTINGS, HEADERS and anything newer: read and ignored.
    Other(u16),
}

#[derive(Debug, thiserror::Error)]
pub enum SpdyError {
    #[error("SPDY frame of version {0}; only version 3 is spoken")]
    Version(u16),
    #[error("SPDY frame of {0} bytes is too large")]
    TooLarge(usize),
    #[error("malformed SPDY frame: {0}")]
    Malformed(&'static str),
    #[error("SPDY header block does not decompress: {0}")]
    Compression(String),
}

/// The protocol's preset dictionary for header compression: each common header name or value
/// with a 4-byte length before it, then a run of status codes, reason phrases and date, MIME and
/// encoding fragments.
pub fn dictionary() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &str = concat!(
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
        "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
        "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
        "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
        "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
        "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
    );
    let mut out = Vec::with_capacity(1423);
    for word in WORDS {
        out.extend_from_slice(&(word.len() as u32).to_be_bytes());
        out.extend_from_slice(word.as_bytes());
    }
    out.extend_from_slice(TAIL.as_bytes());
    out
}

/// One connection's framing state: the two header-compression contexts.
pub struct Codec {
    inflate: Decompress,
    deflate: Compress,
    dictionary: Vec<u8>,
}

impl Default for Codec {
    fn default() -> Self {
        Self::new()
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, SpdyError> {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or(SpdyError::Malformed("short frame"))
}

impl Codec {
    pub fn new() -> Self {
        Self {
            inflate: Decompress::new(true),
            deflate: Compress::new(Compression::default(), true),
            dictionary: dictionary(),
        }
    }

    /// Takes one whole frame off the front of `buffer`, if one is there.
    pub fn decode(&mut self, buffer: &mut Vec<u8>) -> Result<Option<Frame>, SpdyError> {
        if buffer.len() < FRAME_HEADER {
            return Ok(None);
        }
        let length = u32::from_be_bytes([0, buffer[5], buffer[6], buffer[7]]) as usize;
        if length > MAX_FRAME {
            return Err(SpdyError::TooLarge(length));
        }
        if buffer.len() < FRAME_HEADER + length {
            return Ok(None);
        }
        let frame: Vec<u8> = buffer.drain(..FRAME_HEADER + length).collect();
        let flags = frame[4];
        let payload = &frame[FRAME_HEADER..];
        let fin = flags & FLAG_FIN != 0;
        if frame[0] & 0x80 == 0 {
            return Ok(Some(Frame::Data {
                stream_id: u32_at(&frame, 0)? & 0x7fff_ffff,
                fin,
                data: payload.to_vec(),
            }));
        }
        let version = u16::from_be_bytes([frame[0] & 0x7f, frame[1]]);
        if version != VERSION {
            return Err(SpdyError::Version(version));
        }
        let kind = u16::from_be_bytes([frame[2], frame[3]]);
        let stream = || u32_at(payload, 0).map(|id| id & 0x7fff_ffff);
        Ok(Some(match kind {
            SYN_STREAM => Frame::SynStream {
                stream_id: stream()?,
                fin,
                headers: self.headers(payload.get(10..).unwrap_or_default())?,
            },
            SYN_REPLY => Frame::SynReply {
                stream_id: stream()?,
                fin,
                headers: self.headers(payload.get(4..).unwrap_or_default())?,
            },
            // A HEADERS frame's block still advances the shared decompression context.
            HEADERS => {
                self.headers(payload.get(4..).unwrap_or_default())?;
                Frame::Other(HEADERS)
            }
            RST_STREAM => Frame::RstStream {
                stream_id: stream()?,
                status: u32_at(payload, 4)?,
            },
            PING => Frame::Ping(u32_at(payload, 0)?),
            GOAWAY => Frame::GoAway {
                last_stream_id: stream()?,
            },
            WINDOW_UPDATE => Frame::WindowUpdate {
                stream_id: stream()?,
                delta: u32_at(payload, 4)? & 0x7fff_ffff,
            },
            other => Frame::Other(other),
        }))
    }

    /// A compressed header block, decoded.
    fn headers(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
        let mut plain = Vec::with_capacity(block.len() * 4);
        let mut input = block;
        loop {
            let before_in = self.inflate.total_in();
            plain.reserve(4096);
            let result = self
                .inflate
                .decompress_vec(input, &mut plain, FlushDecompress::Sync);
            input = &input[(self.inflate.total_in() - before_in) as usize..];
            match result {
                // Done when all input is taken and the output had room to spare (nothing pending).
                Ok(Status::Ok | Status::BufError)
                    if input.is_empty() && plain.len() < plain.capacity() =>
                {
                    break;
                }
                Ok(Status::StreamEnd) => break,
                Ok(_) => continue,
                Err(error) if error.needs_dictionary().is_some() => self
                    .inflate
                    .set_dictionary(&self.dictionary)
                    .map(drop)
                    .map_err(|e| SpdyError::Compression(e.to_string()))?,
                Err(error) => return Err(SpdyError::Compression(error.to_string())),
            }
        }
        parse_block(&plain)
    }

    /// `frame` on the wire.
    pub fn encode(&mut self, frame: &Frame) -> Result<Vec<u8>, SpdyError> {
        let control = |kind: u16, flags: u8, payload: Vec<u8>| {
            let mut out = Vec::with_capacity(FRAME_HEADER + payload.len());
            out.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
            out.extend_from_slice(&kind.to_be_bytes());
            out.push(flags);
            out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
            out.extend_from_slice(&payload);
            out
        };
        let fin_flag = |fin: bool| if fin { FLAG_FIN } else { 0 };
        Ok(match frame {
            Frame::SynReply {
                stream_id,
                fin,
                headers,
            } => {
                let mut payload = stream_id.to_be_bytes().to_vec();
                payload.extend(self.compress(headers)?);
                control(SYN_REPLY, fin_flag(*fin), payload)
            }
            Frame::SynStream {
                stream_id,
                fin,
                headers,
            } => {
                let mut payload = stream_id.to_be_bytes().to_vec();
                payload.extend_from_slice(&[0; 6]);
                payload.extend(self.compress(headers)?);
                control(SYN_STREAM, fin_flag(*fin), payload)
            }
            Frame::RstStream { stream_id, status } => {
                let mut payload = stream_id.to_be_bytes().to_vec();
                payload.extend_from_slice(&status.to_be_bytes());
                control(RST_STREAM, 0, payload)
            }
            Frame::Ping(id) => control(PING, 0, id.to_be_bytes().to_vec()),
            Frame::GoAway { last_stream_id } => {
                let mut payload = last_stream_id.to_be_bytes().to_vec();
                payload.extend_from_slice(&0u32.to_be_bytes());
                control(GOAWAY, 0, payload)
            }
            Frame::WindowUpdate { stream_id, delta } => {
                let mut payload = stream_id.to_be_bytes().to_vec();
                payload.extend_from_slice(&delta.to_be_bytes());
                control(WINDOW_UPDATE, 0, payload)
            }
            Frame::Data {
                stream_id,
                fin,
                data,
            } => {
                if data.len() > MAX_FRAME - 1 {
                    return Err(SpdyError::TooLarge(data.len()));
                }
                let mut out = Vec::with_capacity(FRAME_HEADER + data.len());
                out.extend_from_slice(&(stream_id & 0x7fff_ffff).to_be_bytes());
                out.push(fin_flag(*fin));
                out.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
                out.extend_from_slice(data);
                out
            }
            Frame::Other(kind) => control(*kind, 0, Vec::new()),
        })
    }

    /// A header block compressed on this side's context, ending on a sync flush.
    ///
    /// No preset dictionary is set for our direction: a reader given one only checks it when
    /// the stream's header announces it, and ours does not.
    fn compress(&mut self, headers: &[(String, String)]) -> Result<Vec<u8>, SpdyError> {
        let mut plain = (headers.len() as u32).to_be_bytes().to_vec();
        for (name, value) in headers {
            plain.extend_from_slice(&(name.len() as u32).to_be_bytes());
            plain.extend_from_slice(name.as_bytes());
            plain.extend_from_slice(&(value.len() as u32).to_be_bytes());
            plain.extend_from_slice(value.as_bytes());
        }
        let mut out = Vec::with_capacity(plain.len() + 64);
        let mut input = plain.as_slice();
        loop {
            out.reserve(256);
            let before = self.deflate.total_in();
            self.deflate
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .map_err(|e| SpdyError::Compression(e.to_string()))?;
            input = &input[(self.deflate.total_in() - before) as usize..];
            // Done when all input is taken and the flush left spare room (nothing pending).
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        Ok(out)
    }
}

/// An uncompressed header block: a count, then length-prefixed names and values.
fn parse_block(block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
    if block.is_empty() {
        return Ok(Vec::new());
    }
    let count = u32_at(block, 0)? as usize;
    let mut at = 4;
    let take = |at: &mut usize| -> Result<String, SpdyError> {
        let length = u32_at(block, *at)? as usize;
        let text = block
            .get(*at + 4..*at + 4 + length)
            .ok_or(SpdyError::Malformed("header block shorter than announced"))?;
        *at += 4 + length;
        Ok(String::from_utf8_lossy(text).into_owned())
    };
    let mut headers = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let name = take(&mut at)?;
        let value = take(&mut at)?;
        headers.push((name, value));
    }
    Ok(headers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_dictionary_has_the_protocols_length_and_ends() {
        let dict = dictionary();
        assert_eq!(dict.len(), 1423);
        assert_eq!(&dict[..11], b"\0\0\0\x07options");
        assert!(dict.ends_with(b",*,enq=0."));
    }

    /// A client-side encoder (compressing with the dictionary, as Go's SPDY framer does) and
    /// our decoder agree, across several frames sharing one compression context.
    #[test]
    fn frames_round_trip_with_a_dictionary_compressing_peer() {
        let mut client = Compress::new(Compression::best(), true);
        client.set_dictionary(&dictionary()).unwrap();
        let block = |client: &mut Compress, headers: &[(&str, &str)]| {
            let mut plain = (headers.len() as u32).to_be_bytes().to_vec();
            for (n, v) in headers {
                plain.extend_from_slice(&(n.len() as u32).to_be_bytes());
                plain.extend_from_slice(n.as_bytes());
                plain.extend_from_slice(&(v.len() as u32).to_be_bytes());
                plain.extend_from_slice(v.as_bytes());
            }
            let mut out = Vec::with_capacity(1024);
            client
                .compress_vec(&plain, &mut out, FlushCompress::Sync)
                .unwrap();
            out
        };
        let syn = |client: &mut Compress, id: u32, headers: &[(&str, &str)]| {
            let mut payload = id.to_be_bytes().to_vec();
            payload.extend_from_slice(&[0; 6]);
            payload.extend(block(client, headers));
            let mut frame = vec![0x80, 3, 0, 1, 0];
            frame.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
            frame.extend(payload);
            frame
        };
        let mut wire = syn(&mut client, 1, &[("streamtype", "error"), ("port", "80")]);
        wire.extend(syn(
            &mut client,
            3,
            &[("streamtype", "data"), ("port", "80")],
        ));
        let mut server = Codec::new();
        wire.extend(server.encode(&Frame::Ping(7)).unwrap());
        wire.extend(
            server
                .encode(&Frame::Data {
                    stream_id: 3,
                    fin: true,
                    data: b"hi".to_vec(),
                })
                .unwrap(),
        );
        // Split mid-frame: decode waits for the rest.
        let mut buffer = wire[..5].to_vec();
        assert_eq!(server.decode(&mut buffer).unwrap(), None);
        buffer.extend_from_slice(&wire[5..]);
        let mut frames = Vec::new();
        while let Some(frame) = server.decode(&mut buffer).unwrap() {
            frames.push(frame);
        }
        let headers = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            frames,
            [
                Frame::SynStream {
                    stream_id: 1,
                    fin: false,
                    headers: headers(&[("streamtype", "error"), ("port", "80")])
                },
                Frame::SynStream {
                    stream_id: 3,
                    fin: false,
                    headers: headers(&[("streamtype", "data"), ("port", "80")])
                },
                Frame::Ping(7),
                Frame::Data {
                    stream_id: 3,
                    fin: true,
                    data: b"hi".to_vec()
                },
            ]
        );
    }

    /// What we compress (without a dictionary), a peer decompressing with one reads back.
    #[test]
    fn replies_decode_on_a_dictionary_reader() {
        let mut server = Codec::new();
        let mut peer = Codec::new();
        for id in [1u32, 3, 5] {
            let reply = Frame::SynReply {
                stream_id: id,
                fin: false,
                headers: vec![("status".into(), format!("ok-{id}"))],
            };
            let mut wire = server.encode(&reply).unwrap();
            assert_eq!(peer.decode(&mut wire).unwrap(), Some(reply));
            assert!(wire.is_empty());
        }
    }
}
