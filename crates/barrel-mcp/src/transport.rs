//! Transports: what carries whole JSON-RPC messages between two peers.
//!
//! A transport moves [`Message`]s; framing (newline-delimited JSON on stdio, events on SSE) stays
//! inside it. The [`peer`](crate::peer) never sees bytes.
//!
//! # Why a transport splits into halves
//!
//! [`Transport::split`] hands out a [`MessageReader`] and a [`MessageWriter`], and the peer drives
//! each from its own loop. One loop that `select!`s between "read the next frame" and "write the
//! next message" would drop a half-read frame whenever a write won the race, so every reader would
//! have to be cancel-safe. With two halves nothing is ever raced against a write: a slow write
//! does not stall reading, and a reader may keep partial state in a local. (The readers here are
//! cancel-safe anyway, which lets the peer stop reading the moment the connection closes.)
//!
//! Any `(reader, writer)` pair is itself a transport, so a transport built from two unrelated
//! halves (a child process's stdout and stdin, an HTTP response stream and a POST sink) needs no
//! new type.

use std::future::Future;
use std::sync::Arc;

use barrel_mcp_types::jsonrpc::DecodeError;
use barrel_mcp_types::{Message, RequestId};

use crate::Error;

mod caller;
pub mod child;
#[cfg(feature = "http-client")]
pub mod http_client;
pub mod memory;
pub mod stdio;

pub use caller::Caller;
pub use memory::{MemoryReader, MemoryTransport, MemoryWriter, memory, memory_with_capacity};
pub use stdio::{StdioReader, StdioTransport, StdioWriter};

/// One inbound frame: a message, or the reason it could not be read.
///
/// A [`DecodeError`] is not fatal: the peer answers it (unless it says `no_reply`) and keeps
/// reading.
pub type Frame = Result<Message, DecodeError>;

/// One message on its way out, with the inbound request it belongs to, if any.
///
/// A response belongs to its request; so do the notifications and requests a handler sends
/// while it serves one. A transport with several streams (Streamable HTTP) uses `related` to
/// put the message on that request's stream; a single-stream transport ignores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// The message.
    pub message: Message,
    /// The inbound request it belongs to.
    pub related: Option<RequestId>,
}

/// A connection that carries whole messages, split into its two halves.
pub trait Transport: Send + 'static {
    /// The half that receives.
    type Reader: MessageReader;
    /// The half that sends.
    type Writer: MessageWriter;

    /// Splits the transport into the half that receives and the half that sends.
    fn split(self) -> (Self::Reader, Self::Writer);

    /// Hands the transport the owner of the connection's handshake, which it asks to run the
    /// handshake again should it lose its session (Streamable HTTP: the server answers 404 for
    /// it). [`Client`](crate::client::Client) calls this before it starts the connection. The
    /// default ignores it: a transport with no session to lose.
    fn set_handshake(&mut self, handshake: Arc<dyn Handshake>) {
        let _ = handshake;
    }

    /// True when the transport hands messages over as they are, never encoded (an in-process
    /// pair, [`memory()`]). A server then answers with JSON values (but for its shared
    /// `initialize` answer), which the other side reads as they are, instead of text it would
    /// parse back. The default: false.
    fn passes_messages_as_they_are(&self) -> bool {
        false
    }
}

/// Whoever owns a connection's handshake (the [`Client`](crate::client::Client)). A transport
/// that lost its session runs `initialize` again with what the owner asks, and hands the owner
/// the answer, so that what the client knows of the server (its revision, capabilities and
/// info) is never older than the session. The transport sends the two messages itself (the
/// connection's own queue may be held up behind the very message that met the loss).
pub trait Handshake: Send + Sync + 'static {
    /// The params of the `initialize` to send.
    fn params(&self) -> Result<serde_json::Value, Error>;

    /// Takes the `initialize` result: checks it and keeps what it says of the server. An error
    /// means the session cannot be taken up again (`notifications/initialized` is not sent).
    fn accept(&self, result: serde_json::Value) -> Result<(), Error>;
}

/// The receiving half of a transport.
pub trait MessageReader: Send + 'static {
    /// Receives the next frame.
    ///
    /// Returns `Ok(None)` on a clean end of input, `Ok(Some(Err(_)))` for a frame that could not
    /// be decoded (the connection goes on), and `Err(_)` when the transport itself failed (the
    /// connection ends).
    fn recv(&mut self) -> impl Future<Output = Result<Option<Frame>, Error>> + Send;

    /// Who sent the frame [`recv`](Self::recv) returned last, when the transport knows (an
    /// authenticated HTTP request). The peer asks right after each `recv`. Default: nobody.
    fn caller(&self) -> Option<Arc<Caller>> {
        None
    }
}

/// The sending half of a transport.
pub trait MessageWriter: Send + 'static {
    /// Sends one message; resolves once it is handed to the underlying channel (flushed, for
    /// byte streams).
    fn send(&mut self, message: Message) -> impl Future<Output = Result<(), Error>> + Send;

    /// Sends one message knowing which inbound request it belongs to. The default ignores that
    /// and calls [`MessageWriter::send`]; multi-stream transports override it.
    fn send_outgoing(
        &mut self,
        outgoing: Outgoing,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        self.send(outgoing.message)
    }

    /// Sends several messages that were waiting together, in order. The default sends them
    /// one by one; a byte stream overrides it to write them at once (one write and one flush
    /// for the lot, where each message alone would cost both).
    fn send_batch(
        &mut self,
        batch: Vec<Outgoing>,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        async move {
            for outgoing in batch {
                self.send_outgoing(outgoing).await?;
            }
            Ok(())
        }
    }

    /// Closes the sending side so the other end sees the end of input.
    fn close(&mut self) -> impl Future<Output = Result<(), Error>> + Send;
}

impl<R: MessageReader, W: MessageWriter> Transport for (R, W) {
    type Reader = R;
    type Writer = W;

    fn split(self) -> (R, W) {
        self
    }
}
