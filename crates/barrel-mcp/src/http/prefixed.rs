//! Telling HTTP/1 from HTTP/2 under a deadline, before hyper sees the connection.
//!
//! hyper-util's auto builder reads until it has the 24 bytes of the HTTP/2 preface, or bytes
//! that cannot be one, with no timer: a client that connects and sends nothing, or half a
//! preface, held its connection slot for ever (hyper's header read timeout starts only once the
//! version is known). [`sniff`] reads those bytes itself within
//! [`HttpConfig::header_read_timeout`](super::HttpConfig::header_read_timeout) and hands hyper a
//! [`Prefixed`] stream that replays them.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The client connection preface of HTTP/2 (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads the first bytes of a connection until they settle its HTTP version: all 24 bytes of
/// the HTTP/2 preface, a byte that departs from it (HTTP/1), or the end of the stream. `None`
/// when that takes longer than `limit` (the connection is then dropped) or reading fails.
pub(crate) async fn sniff<I>(mut io: I, limit: Duration) -> Option<Prefixed<I>>
where
    I: AsyncRead + Unpin,
{
    let mut prefix = [0u8; 24];
    let mut len = 0;
    let read = async {
        while len < prefix.len() && prefix[..len] == H2_PREFACE[..len] {
            match io.read(&mut prefix[len..]).await? {
                0 => break,
                n => len += n,
            }
        }
        Ok::<(), io::Error>(())
    };
    match tokio::time::timeout(limit, read).await {
        Ok(Ok(())) => Some(Prefixed {
            prefix,
            len,
            pos: 0,
            io,
        }),
        Ok(Err(error)) => {
            tracing::debug!(%error, "connection failed before its first request");
            None
        }
        Err(_) => {
            tracing::debug!("connection sent no request in time; dropped");
            None
        }
    }
}

/// A stream that first yields the bytes [`sniff`] read, then the rest of the connection.
#[derive(Debug)]
pub(crate) struct Prefixed<I> {
    prefix: [u8; 24],
    len: usize,
    pos: usize,
    io: I,
}

impl<I: AsyncRead + Unpin> AsyncRead for Prefixed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.pos < self.len {
            let n = (self.len - self.pos).min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.prefix[start..start + n]);
            self.pos += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Prefixed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    async fn sniffed(sent: &[u8], close: bool) -> Option<Vec<u8>> {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(sent).await.expect("write");
        if close {
            drop(client);
        } else {
            // Keep the client open past the deadline.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                drop(client);
            });
        }
        let mut stream = sniff(server, Duration::from_millis(100)).await?;
        let mut replayed = Vec::new();
        stream.read_to_end(&mut replayed).await.expect("read");
        Some(replayed)
    }

    #[tokio::test]
    async fn replays_what_it_read() {
        let h1 = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(sniffed(h1, true).await.as_deref(), Some(&h1[..]));
        let mut h2 = H2_PREFACE.to_vec();
        h2.extend_from_slice(b"more frames");
        assert_eq!(sniffed(&h2, true).await.as_deref(), Some(&h2[..]));
        assert_eq!(sniffed(b"", true).await.as_deref(), Some(&b""[..]));
    }

    #[tokio::test]
    async fn decides_on_the_first_byte_that_departs_from_the_preface() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"PRX").await.expect("write");
        // The client stays open: the third byte alone settles it as HTTP/1.
        let mut stream = sniff(server, Duration::from_millis(100))
            .await
            .expect("settled before the deadline");
        let mut first = [0u8; 3];
        stream.read_exact(&mut first).await.expect("read");
        assert_eq!(&first, b"PRX");
        drop(client);
    }

    #[tokio::test]
    async fn silence_and_half_a_preface_time_out() {
        assert!(sniffed(b"", false).await.is_none());
        assert!(sniffed(&H2_PREFACE[..16], false).await.is_none());
    }
}
