//! Newline-delimited JSON over a byte stream: the MCP stdio transport.
//!
//! Each message is one line of UTF-8 JSON ended by `\n` (a `\r` before it is tolerated). Reading
//! keeps memory bounded: a line longer than the maximum is skipped up to its newline without
//! being buffered, and reported as a -32600 frame with a null id. Invalid UTF-8 is reported as a
//! -32700 frame; empty lines are skipped. Neither ends the connection.

use barrel_mcp_types::Message;
use barrel_mcp_types::jsonrpc::{self, DecodeError, ErrorObject};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Stdin, Stdout};

use super::{Frame, MessageReader, MessageWriter, Transport};
use crate::Error;

/// The default longest line accepted: 4 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 4 * 1024 * 1024;

/// Newline-delimited JSON over a reader and a writer.
#[derive(Debug)]
pub struct StdioTransport<R, W> {
    reader: R,
    writer: W,
    max_line_length: usize,
}

impl StdioTransport<Stdin, Stdout> {
    /// The process's own stdin and stdout. Nothing else may write to stdout while it is in use.
    pub fn stdio() -> Self {
        Self::new(tokio::io::stdin(), tokio::io::stdout())
    }
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads messages from `reader` and writes them to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader,
            writer,
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
        }
    }

    /// Sets the longest line accepted, in bytes, not counting the newline (default 4 MiB).
    pub fn max_line_length(mut self, max: usize) -> Self {
        self.max_line_length = max;
        self
    }
}

impl<R, W> Transport for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Reader = StdioReader<R>;
    type Writer = StdioWriter<W>;

    fn split(self) -> (StdioReader<R>, StdioWriter<W>) {
        let reader = StdioReader {
            reader: BufReader::new(self.reader),
            line: Vec::new(),
            oversized: false,
            max_line_length: self.max_line_length,
        };
        (
            reader,
            StdioWriter {
                writer: self.writer,
            },
        )
    }
}

/// The receiving half of a [`StdioTransport`].
#[derive(Debug)]
pub struct StdioReader<R> {
    reader: BufReader<R>,
    /// The part of the current line read so far; never longer than `max_line_length`.
    line: Vec<u8>,
    /// True while skipping the rest of a line that is already too long.
    oversized: bool,
    max_line_length: usize,
}

/// What ended a line.
enum LineEnd {
    Newline,
    Eof,
}

impl<R: AsyncRead + Unpin + Send> StdioReader<R> {
    /// Reads up to the end of the current line into `self.line` (or marks it oversized).
    ///
    /// Cancel-safe: the only await is `fill_buf`, and the partial line lives in `self`.
    async fn read_line(&mut self) -> Result<LineEnd, Error> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(LineEnd::Eof);
            }
            let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if !self.oversized {
                if self.line.len() + chunk.len() > self.max_line_length {
                    self.oversized = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = end.unwrap_or(buf.len());
            self.reader.consume(used);
            if end.is_some() {
                return Ok(LineEnd::Newline);
            }
        }
    }

    /// Turns the finished line into a frame, or `None` for a blank line, and resets the state.
    fn take_frame(&mut self) -> Option<Frame> {
        if std::mem::take(&mut self.oversized) {
            let message = format!(
                "message too large: a line may hold at most {} bytes",
                self.max_line_length
            );
            return Some(Err(decode_error(ErrorObject::invalid_request(message))));
        }
        let line = std::mem::take(&mut self.line);
        let text = match std::str::from_utf8(&line) {
            Ok(text) => text.trim_end_matches('\r'),
            Err(_) => {
                let error = ErrorObject::parse_error("parse error: the line is not valid UTF-8");
                return Some(Err(decode_error(error)));
            }
        };
        if text.trim().is_empty() {
            return None;
        }
        Some(jsonrpc::decode(text))
    }
}

fn decode_error(error: ErrorObject) -> DecodeError {
    DecodeError {
        id: None,
        error,
        no_reply: false,
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageReader for StdioReader<R> {
    /// Cancel-safe: a partly read line is kept and finished by the next call.
    async fn recv(&mut self) -> Result<Option<Frame>, Error> {
        loop {
            let end = self.read_line().await?;
            let at_eof = matches!(end, LineEnd::Eof);
            if at_eof && self.line.is_empty() && !self.oversized {
                return Ok(None);
            }
            // A last line without a newline is still a frame.
            if let Some(frame) = self.take_frame() {
                return Ok(Some(frame));
            }
        }
    }
}

/// The sending half of a [`StdioTransport`].
#[derive(Debug)]
pub struct StdioWriter<W> {
    writer: W,
}

impl<W: AsyncWrite + Unpin + Send + 'static> MessageWriter for StdioWriter<W> {
    /// Writes the message as one line and flushes. Not cancel-safe: a dropped call may leave a
    /// partial line behind, so the peer never races a write against anything.
    async fn send(&mut self, message: Message) -> Result<(), Error> {
        let mut line = message.to_json();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// Writes the messages as lines with one write and one flush.
    async fn send_batch(&mut self, batch: Vec<super::Outgoing>) -> Result<(), Error> {
        let mut lines = Vec::with_capacity(batch.len() * 128);
        for outgoing in batch {
            serde_json::to_writer(&mut lines, &outgoing.message)?;
            lines.push(b'\n');
        }
        self.writer.write_all(&lines).await?;
        self.writer.flush().await?;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.writer.shutdown().await?;
        Ok(())
    }
}
