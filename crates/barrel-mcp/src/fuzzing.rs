//! Fuzz target bodies (feature `fuzzing`, not a public API): plain functions from bytes that
//! panic when an oracle breaks. `cargo fuzz` drives them (`fuzz/`, `scripts/fuzz`), and the
//! `barrel-mcp-fuzz` crate runs them over a committed corpus on every `cargo test`, so CI covers
//! them on every change.
//!
//! | target | what it feeds | oracles |
//! |---|---|---|
//! | [`framing`] | one frame, and a stream split at arbitrary points | `jsonrpc::decode` never panics and a decoded message re-encodes to itself; stdio lines and SSE events come out the same however the bytes are split |
//! | [`security_parsers`] | one string | `Host`/`Origin` parsing, event ids, cursors and `requestState` never panic; what they accept has the shape they promise; no forged state opens |
//! | [`uri_template`] | a template and a URI | parsing, matching and expansion never panic, and matching stays within a time bound |
//! | [`peer`] | a sequence of lines, then end of input | no id answered more often than frames carried it (none for a notification), and the connection ends |
//! | [`front_door`] | an HTTP request | never a 5xx but 503, no session after a refusal, every JSON body a JSON-RPC message |

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use barrel_mcp_types::jsonrpc::decode;
use barrel_mcp_types::{ErrorObject, Message, Notification, Payload, Request, RequestId};
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

use crate::peer::{self, BoxFuture, Handler, Peer, PeerConfig, RequestContext};
use crate::transport::{Frame, MessageReader, MessageWriter, StdioTransport, Transport};

/// A single-threaded runtime for one input.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
}

/// Split points taken from the input's first byte: the rest is cut into chunks of 1 to 16
/// bytes, so every input also tries many ways of arriving.
fn chunks(data: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let Some((&seed, rest)) = data.split_first() else {
        return (Vec::new(), data);
    };
    let mut out = Vec::new();
    let mut at = 0;
    let mut step = usize::from(seed % 16) + 1;
    while at < rest.len() {
        let end = (at + step).min(rest.len());
        out.push(&rest[at..end]);
        at = end;
        step = step % 16 + 1;
    }
    (out, rest)
}

/// [`framing`]: JSON-RPC decoding, stdio framing and the client's SSE decoder.
pub fn framing(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(message) = decode(text)
    {
        let again = decode(&message.to_json()).expect("a decoded message re-decodes");
        assert_eq!(again, message, "re-encoding changed the message");
    }
    let (split, whole) = chunks(data);
    assert_eq!(
        stdio_lines(split.clone()),
        stdio_lines(vec![whole]),
        "stdio frames depend on how the bytes arrived"
    );
    #[cfg(feature = "http-client")]
    {
        use crate::transport::http_client::sse::SseDecoder;
        let mut one = SseDecoder::new(4096);
        let mut all = Vec::new();
        one.feed(whole, &mut all);
        let mut many = SseDecoder::new(4096);
        let mut pieces = Vec::new();
        for chunk in &split {
            many.feed(chunk, &mut pieces);
        }
        assert_eq!(all, pieces, "SSE events depend on how the bytes arrived");
        assert_eq!(one.last_event_id(), many.last_event_id());
    }
}

/// The frames stdio reads from `chunks`, as text (messages re-encoded, errors by code).
fn stdio_lines(chunks: Vec<&[u8]>) -> Vec<String> {
    let owned: Vec<Vec<u8>> = chunks.into_iter().map(<[u8]>::to_vec).collect();
    runtime().block_on(async move {
        let source = OwnedChunks {
            chunks: owned.into_iter(),
            current: Vec::new(),
            at: 0,
        };
        let (mut reader, _writer) = StdioTransport::new(source, tokio::io::sink())
            .max_line_length(1024)
            .split();
        let mut out = Vec::new();
        while let Ok(Some(frame)) = reader.recv().await {
            out.push(match frame {
                Ok(message) => message.to_json(),
                Err(error) => format!("error {}", error.error.code.0),
            });
        }
        out
    })
}

/// An `AsyncRead` that hands out the chunks one read at a time.
struct OwnedChunks {
    chunks: std::vec::IntoIter<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl AsyncRead for OwnedChunks {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at == self.current.len() {
            match self.chunks.next() {
                Some(next) => {
                    self.current = next;
                    self.at = 0;
                }
                None => return Poll::Ready(Ok(())),
            }
        }
        let n = (self.current.len() - self.at).min(buf.remaining());
        let at = self.at;
        buf.put_slice(&self.current[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// [`security_parsers`]: `Host`/`Origin`, SSE event ids, cursors and `requestState`.
pub fn security_parsers(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    #[cfg(feature = "http-server")]
    {
        if let Some((name, _port)) = crate::http::fuzzing::split_host(&text) {
            assert!(
                name.is_ascii(),
                "host names are ASCII (compared ignoring ASCII case)"
            );
            assert!(
                !name.contains(['@', '/', '?', '#', ' ']),
                "a host name with a delimiter: {name:?}"
            );
        }
        let _ = crate::http::fuzzing::origin_allowed(&text);
        if let Some((stream, seq)) = crate::http::fuzzing::parse_event_id(&text) {
            assert_eq!(text, format!("{stream}.{seq}"), "event ids parse exactly");
        }
    }
    if let Ok(cursor) = crate::server::cursor::decode_cursor(&text) {
        let again = crate::server::cursor::encode_cursor(cursor.offset, cursor.fingerprint);
        assert_eq!(
            crate::server::cursor::decode_cursor(&again),
            Ok(cursor),
            "a cursor survives re-encoding"
        );
    }
    let codec = crate::server::request_state::RequestStateCodec::new(&[7; 32])
        .expect("a 32-byte key is accepted");
    assert!(
        codec.open(&text, "tools/call", "digest", None).is_err(),
        "a forged requestState opened"
    );
}

/// [`uri_template`]: RFC 6570 parsing, matching and expansion.
pub fn uri_template(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (template, uri) = text.split_once('\u{0}').unwrap_or((&text, ""));
    let Ok(template) = crate::server::uri_template::UriTemplate::parse(template) else {
        return;
    };
    let started = Instant::now();
    let matched = template.matches(uri);
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "matching took {:?}",
        started.elapsed()
    );
    if let Some(values) = matched {
        let vars = values
            .into_iter()
            .map(|(name, value)| (name, value.into()))
            .collect();
        let _ = template.expand(&vars);
    }
}

/// A handler that lets `wait` run until cancelled and answers anything else at once with its
/// params. (It never panics: libFuzzer aborts on any panic, even one the peer would catch;
/// the peer's panic isolation has tests of its own.)
struct Scripted;

impl Handler for Scripted {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        Box::pin(async move {
            match request.method.as_str() {
                "wait" => {
                    cx.cancel.cancelled().await;
                    Ok(Payload::Value(Value::Null))
                }
                _ => Ok(Payload::Value(request.params.unwrap_or(Value::Null))),
            }
        })
    }

    fn on_notification(&self, _: Notification, _: &Peer) {}
}

/// Yields the frames, then the end of input.
struct Frames(std::vec::IntoIter<Frame>);

impl MessageReader for Frames {
    async fn recv(&mut self) -> Result<Option<Frame>, crate::Error> {
        Ok(self.0.next())
    }
}

/// Keeps what the peer sends.
struct Collect(Arc<std::sync::Mutex<Vec<Message>>>);

impl MessageWriter for Collect {
    async fn send(&mut self, message: Message) -> Result<(), crate::Error> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(message);
        Ok(())
    }

    async fn close(&mut self) -> Result<(), crate::Error> {
        Ok(())
    }
}

/// [`peer`]: the JSON-RPC engine fed a sequence of lines.
pub fn peer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let frames: Vec<Frame> = text.lines().take(64).map(decode).collect();
    // How many frames carry each id: requests, and frames refused with a readable id (those
    // are answered too, with the error). No id may be answered more often than that.
    let mut carried: HashMap<RequestId, usize> = HashMap::new();
    for frame in &frames {
        let id = match frame {
            Ok(Message::Request(request)) => Some(request.id.clone()),
            Err(error) if !error.no_reply => error.id.clone(),
            _ => None,
        };
        if let Some(id) = id {
            *carried.entry(id).or_default() += 1;
        }
    }
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let transport = (Frames(frames.into_iter()), Collect(Arc::clone(&sent)));
    let config = PeerConfig {
        drain_timeout: Duration::from_millis(50),
        close_grace: Duration::from_millis(50),
        handler_grace: Duration::from_millis(50),
        ..PeerConfig::default()
    };
    runtime().block_on(async move {
        let (_peer, task) = peer::serve(transport, Arc::new(Scripted), config);
        let ended = tokio::time::timeout(Duration::from_secs(5), task).await;
        assert!(
            ended.is_ok(),
            "the connection did not end after its input did"
        );
    });
    let sent = sent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mut answered: HashMap<RequestId, usize> = HashMap::new();
    for message in sent {
        let Message::Response(response) = message else {
            continue;
        };
        let Some(id) = response.id else { continue };
        let count = answered.entry(id.clone()).or_default();
        *count += 1;
        let frames = carried.get(&id).copied().unwrap_or(0);
        assert!(
            *count <= frames,
            "{id} answered {count} times, carried by {frames} frames"
        );
    }
}

/// [`front_door`]: one HTTP request through the Streamable HTTP router.
#[cfg(feature = "http-server")]
pub fn front_door(data: &[u8]) {
    use tower::ServiceExt;

    use crate::http::{HttpConfig, StreamableHttp};
    use crate::server::{Ctx, Server};

    let (head, body) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let method = match lines.next().unwrap_or("").bytes().next().unwrap_or(0) % 5 {
        0 => http::Method::GET,
        1 => http::Method::DELETE,
        2 => http::Method::OPTIONS,
        _ => http::Method::POST,
    };
    let mut request = http::Request::builder().method(method).uri("/mcp");
    for line in lines.take(16) {
        if let Some((name, value)) = line.split_once(':') {
            request = request.header(name.trim(), value.trim());
        }
    }
    let Ok(request) = request.body(axum::body::Body::from(body.to_vec())) else {
        return;
    };
    let server = Server::builder()
        .name("fuzz", "0")
        .tool(
            "echo",
            "Echo",
            |_: Ctx, args: serde_json::Map<String, Value>| async move {
                Ok(Value::Object(args).to_string())
            },
        )
        .build()
        .expect("the fuzz server builds");
    let http = StreamableHttp::new(server, HttpConfig::default());
    runtime().block_on(async {
        let Ok(response) = http.router().oneshot(request).await;
        let status = response.status();
        assert!(
            !status.is_server_error() || status == http::StatusCode::SERVICE_UNAVAILABLE,
            "a {status}"
        );
        if status.is_client_error() {
            assert_eq!(http.session_count(), 0, "a session after a {status}");
        }
        let is_json = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes() == b"application/json");
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        if is_json {
            let value: Value = serde_json::from_slice(&bytes).expect("a JSON body is JSON");
            assert!(
                value.get("jsonrpc").is_some() || value.get("error").is_some(),
                "a JSON body that is neither JSON-RPC nor an OAuth error: {value}"
            );
        }
        http.shutdown();
    });
}
