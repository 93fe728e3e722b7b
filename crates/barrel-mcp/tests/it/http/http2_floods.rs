//! HTTP/2 floods beyond Rapid Reset, written as raw frames (a client library refuses to send
//! them): a header block continued forever (CONTINUATION, CVE-2024-27316), a header list over
//! the limit, a storm of `SETTINGS`, and bodies cut into one-byte and empty `DATA` frames. Each
//! costs the attacker its own connection at most: the others are served, and a request whose
//! body arrives a byte per frame is still answered.

use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::TestServer;
use crate::support::within;

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// A cleartext HTTP/2 connection (prior knowledge) that writes whatever frames a test wants.
struct Raw {
    tcp: TcpStream,
    authority: String,
}

/// How the server answered a stream, or ended the connection.
#[derive(Debug, PartialEq)]
enum Seen {
    /// A response `HEADERS` on the stream: the first byte of its header block (`0x88` is
    /// `:status 200`).
    Response(u8),
    /// `RST_STREAM` on the stream.
    Reset,
    /// `GOAWAY`, with its error code.
    GoAway(u32),
    /// The socket closed or was reset.
    Closed,
}

impl Raw {
    async fn open(server: &TestServer) -> Self {
        let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
        tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .expect("preface");
        let mut raw = Self {
            tcp,
            authority: format!("localhost:{}", server.addr.port()),
        };
        raw.frame(SETTINGS, 0, 0, &[]).await.expect("settings");
        raw
    }

    async fn frame(
        &mut self,
        kind: u8,
        flags: u8,
        stream: u32,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let length = u32::try_from(payload.len())
            .expect("small frame")
            .to_be_bytes();
        let mut frame = Vec::with_capacity(9 + payload.len());
        frame.extend_from_slice(&length[1..]);
        frame.extend_from_slice(&[kind, flags]);
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(payload);
        self.tcp.write_all(&frame).await
    }

    /// A header block for a request: the method and path, this connection's authority, and
    /// `extra` literal fields (HPACK, no Huffman, nothing indexed).
    fn request_block(&self, post: bool, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut block = vec![if post { 0x83 } else { 0x82 }, 0x86];
        literal_indexed_name(&mut block, 4, path); // :path
        literal_indexed_name(&mut block, 1, &self.authority); // :authority
        for (name, value) in extra {
            literal(&mut block, name, value);
        }
        block
    }

    /// Reads frames until the server answers `stream`, or ends the connection.
    async fn answer(&mut self, stream: u32) -> Seen {
        loop {
            let mut head = [0u8; 9];
            if self.tcp.read_exact(&mut head).await.is_err() {
                return Seen::Closed;
            }
            let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
            let mut payload = vec![0u8; length];
            if self.tcp.read_exact(&mut payload).await.is_err() {
                return Seen::Closed;
            }
            match head[3] {
                GOAWAY if payload.len() >= 8 => {
                    return Seen::GoAway(u32::from_be_bytes([
                        payload[4], payload[5], payload[6], payload[7],
                    ]));
                }
                HEADERS if id == stream => return Seen::Response(payload[0]),
                RST_STREAM if id == stream => return Seen::Reset,
                _ => {}
            }
        }
    }

    /// Whether a GET of the legacy SSE endpoint on `stream` is answered 200.
    async fn serves(&mut self, stream: u32) -> bool {
        let block = self.request_block(false, "/sse", &[("accept", "text/event-stream")]);
        if self
            .frame(HEADERS, END_HEADERS | END_STREAM, stream, &block)
            .await
            .is_err()
        {
            return false;
        }
        matches!(
            tokio::time::timeout(Duration::from_secs(5), self.answer(stream)).await,
            Ok(Seen::Response(0x88))
        )
    }
}

/// A literal header field without indexing, with a new name (RFC 7541 §6.2.2); lengths below
/// 127.
fn literal(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0x00);
    string(block, name);
    string(block, value);
}

/// A literal header field without indexing whose name is static-table entry `index` (< 15).
fn literal_indexed_name(block: &mut Vec<u8>, index: u8, value: &str) {
    block.push(index);
    string(block, value);
}

fn string(block: &mut Vec<u8>, text: &str) {
    let length = u8::try_from(text.len()).expect("short string");
    assert!(length < 127);
    block.push(length);
    block.extend_from_slice(text.as_bytes());
}

#[tokio::test]
async fn a_header_block_continued_forever_ends_the_connection() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut raw = Raw::open(&server).await;
    let start = raw.request_block(false, "/sse", &[]);
    raw.frame(HEADERS, 0, 1, &start).await.expect("headers");
    // Frames of about 1 KiB each, never ending the block: 8 MiB if nobody stops it.
    let mut piece = Vec::new();
    for i in 0..9 {
        literal(&mut piece, &format!("x-flood-{i}"), &"a".repeat(100));
    }
    let mut sent = 0usize;
    for _ in 0..8_000 {
        if raw.frame(CONTINUATION, 0, 1, &piece).await.is_err() {
            break;
        }
        sent += piece.len();
    }
    // The server stopped reading long before: it ended the connection (GOAWAY, or the socket
    // closed under the flood).
    let seen = within(raw.answer(1)).await;
    assert!(
        matches!(seen, Seen::GoAway(_) | Seen::Closed),
        "{seen:?} after {sent} bytes"
    );
    let mut other = Raw::open(&server).await;
    assert!(other.serves(1).await, "another connection is served");
}

#[tokio::test]
async fn a_header_list_over_the_limit_is_refused_and_the_connection_goes_on() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut raw = Raw::open(&server).await;
    // 24 KiB of headers in one block, over the 16 KiB default, on a request that is otherwise
    // served 200 (the `serves` request with more headers).
    let mut fields: Vec<(String, String)> = vec![("accept".into(), "text/event-stream".into())];
    fields.extend((0..240).map(|i| (format!("x-big-{i}"), "b".repeat(90))));
    let refs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let block = raw.request_block(false, "/sse", &refs);
    // Split at the 16 KiB frame size: HEADERS, then the rest in one CONTINUATION.
    let (first, rest) = block.split_at(16_000);
    raw.frame(HEADERS, END_STREAM, 1, first)
        .await
        .expect("headers");
    raw.frame(CONTINUATION, END_HEADERS, 1, rest)
        .await
        .expect("continuation");
    let seen = within(raw.answer(1)).await;
    // Refused: a reset stream or an error status, never the 200 the same request gets
    // without the extra headers.
    assert!(
        matches!(seen, Seen::Reset | Seen::Response(_)) && seen != Seen::Response(0x88),
        "{seen:?}"
    );
    assert!(
        raw.serves(3).await,
        "the same connection serves the next request"
    );
}

#[tokio::test]
async fn a_storm_of_settings_costs_only_its_connection() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut raw = Raw::open(&server).await;
    // SETTINGS frames that are never read back: at most the socket's buffers, then the
    // writes stop (the server stops reading) or the connection ends.
    let flood = async {
        for _ in 0..100_000 {
            if raw
                .frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100])
                .await
                .is_err()
            {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), flood).await;
    let mut other = Raw::open(&server).await;
    assert!(other.serves(1).await, "another connection is served");
}

#[tokio::test]
async fn a_body_a_byte_per_frame_is_answered_and_empty_frames_cost_only_their_connection() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut raw = Raw::open(&server).await;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bytes", "version": "0"}}})
    .to_string();
    let block = raw.request_block(
        true,
        "/mcp",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
    );
    raw.frame(HEADERS, END_HEADERS, 1, &block)
        .await
        .expect("headers");
    let bytes = body.as_bytes();
    for (i, byte) in bytes.iter().enumerate() {
        let flags = if i + 1 == bytes.len() { END_STREAM } else { 0 };
        raw.frame(DATA, flags, 1, &[*byte]).await.expect("data");
    }
    assert_eq!(within(raw.answer(1)).await, Seen::Response(0x88));

    // Empty DATA frames that never end a body: the connection may end, the listener goes on.
    let mut empty = Raw::open(&server).await;
    let block = empty.request_block(true, "/mcp", &[("content-type", "application/json")]);
    empty
        .frame(HEADERS, END_HEADERS, 1, &block)
        .await
        .expect("headers");
    let flood = async {
        for _ in 0..200_000 {
            if empty.frame(DATA, 0, 1, &[]).await.is_err() {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), flood).await;
    let mut other = Raw::open(&server).await;
    assert!(other.serves(1).await, "another connection is served");
}
