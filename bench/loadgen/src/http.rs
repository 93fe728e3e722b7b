//! A minimal HTTP/1.1 client connection: keep-alive, TCP_NODELAY, one request in flight.
//!
//! It reads `Content-Length`, chunked and read-to-close bodies, which is all a Streamable HTTP
//! server sends in answer to a POST or DELETE. Only loopback targets are accepted.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one request may take before it counts as an error and the connection is dropped.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest response head or body we accept; anything bigger is an error.
const MAX_RESPONSE: usize = 1 << 20;

/// Where the server listens: a loopback socket address and the request path.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddr,
    pub authority: String,
    pub path: String,
}

impl Target {
    /// Parses `http://127.0.0.1:PORT/path`; any non-loopback host is refused.
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = authority.replace("localhost", "127.0.0.1");
        let addr: SocketAddr = authority
            .parse()
            .map_err(|e| format!("{url}: expected 127.0.0.1:PORT ({e})"))?;
        if !addr.ip().is_loopback() {
            return Err(format!(
                "{url}: the load generator only targets loopback addresses"
            ));
        }
        Ok(Self {
            addr,
            authority,
            path: path.to_owned(),
        })
    }
}

/// What we keep of a response.
#[derive(Debug, Default)]
pub struct Response {
    pub status: u16,
    pub session: Option<String>,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Response {
    /// True when the body is an SSE stream rather than a JSON document.
    pub fn is_sse(&self) -> bool {
        self.content_type.starts_with("text/event-stream")
    }
}

/// One keep-alive connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Set when the server asked to close, or framing was lost; the caller reconnects.
    pub broken: bool,
}

impl Conn {
    /// Opens a connection with TCP_NODELAY set, so small requests are not held back by Nagle.
    pub async fn connect(target: &Target) -> io::Result<Self> {
        let stream = TcpStream::connect(target.addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(8192),
            broken: false,
        })
    }

    /// Writes one request and reads its whole response, under [`REQUEST_TIMEOUT`].
    pub async fn roundtrip(&mut self, request: &[u8]) -> io::Result<Response> {
        let result = tokio::time::timeout(REQUEST_TIMEOUT, async {
            self.stream.write_all(request).await?;
            self.read_response().await
        })
        .await;
        let result = result.unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()));
        if result.is_err() {
            self.broken = true;
        }
        result
    }

    async fn fill(&mut self) -> io::Result<usize> {
        if self.buf.len() > MAX_RESPONSE {
            return Err(io::Error::other("response too large"));
        }
        self.buf.reserve(8192);
        let n = self.stream.read_buf(&mut self.buf).await?;
        Ok(n)
    }

    async fn read_response(&mut self) -> io::Result<Response> {
        let (head_len, mut response, framing) = loop {
            if let Some(parsed) = parse_head(&self.buf)? {
                break parsed;
            }
            if self.fill().await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        };
        self.buf.drain(..head_len);
        response.body = match framing {
            Framing::Length(len) => self.read_exact_body(len).await?,
            Framing::Chunked => self.read_chunked().await?,
            Framing::Close => {
                while self.fill().await? > 0 {}
                self.broken = true;
                std::mem::take(&mut self.buf)
            }
        };
        Ok(response)
    }

    async fn read_exact_body(&mut self, len: usize) -> io::Result<Vec<u8>> {
        if len > MAX_RESPONSE {
            return Err(io::Error::other("response too large"));
        }
        while self.buf.len() < len {
            if self.fill().await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(self.buf.drain(..len).collect())
    }

    async fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&self.buf, b"\r\n") {
                    break i;
                }
                if self.fill().await? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            };
            let size = chunk_size(&self.buf[..line_end])?;
            self.buf.drain(..line_end + 2);
            if size == 0 {
                // No trailers are expected: the last chunk is followed by an empty line.
                let end = self.read_exact_body(2).await?;
                if end != b"\r\n" {
                    return Err(io::Error::other("trailers are not supported"));
                }
                return Ok(body);
            }
            if body.len() + size > MAX_RESPONSE {
                return Err(io::Error::other("response too large"));
            }
            let chunk = self.read_exact_body(size + 2).await?;
            body.extend_from_slice(&chunk[..size]);
        }
    }
}

enum Framing {
    Length(usize),
    Chunked,
    Close,
}

fn parse_head(buf: &[u8]) -> io::Result<Option<(usize, Response, Framing)>> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut headers);
    let len = match head.parse(buf).map_err(io::Error::other)? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial if buf.len() > MAX_RESPONSE => {
            return Err(io::Error::other("response head too large"));
        }
        httparse::Status::Partial => return Ok(None),
    };
    let status = head.code.unwrap_or(0);
    let mut response = Response {
        status,
        ..Response::default()
    };
    let mut framing = if status == 204 || status == 304 || status < 200 {
        Framing::Length(0)
    } else {
        Framing::Close
    };
    for header in head.headers.iter() {
        let value = String::from_utf8_lossy(header.value);
        if header.name.eq_ignore_ascii_case("content-length") {
            let n = value.trim().parse().map_err(io::Error::other)?;
            framing = Framing::Length(n);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if value.to_ascii_lowercase().contains("chunked") {
                framing = Framing::Chunked;
            }
        } else if header.name.eq_ignore_ascii_case("mcp-session-id") {
            response.session = Some(value.into_owned());
        } else if header.name.eq_ignore_ascii_case("content-type") {
            response.content_type = value.to_ascii_lowercase();
        }
    }
    Ok(Some((len, response, framing)))
}

fn chunk_size(line: &[u8]) -> io::Result<usize> {
    let text = std::str::from_utf8(line).map_err(io::Error::other)?;
    let hex = text.split(';').next().unwrap_or("").trim();
    usize::from_str_radix(hex, 16).map_err(io::Error::other)
}

/// The first position of `needle` in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets() {
        assert!(Target::parse("http://127.0.0.1:9090/mcp").is_ok());
        assert!(Target::parse("http://localhost:9090/mcp").is_ok());
        assert!(Target::parse("http://10.0.0.1:9090/mcp").is_err());
        assert!(Target::parse("https://127.0.0.1:9090/mcp").is_err());
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(chunk_size(b"1a").unwrap(), 26);
        assert_eq!(chunk_size(b"0;ext=1").unwrap(), 0);
        assert!(chunk_size(b"zz").is_err());
    }
}
