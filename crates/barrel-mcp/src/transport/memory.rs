//! An in-process transport: two connected ends over bounded channels, for tests and for wiring a
//! client to a server in the same process.

use barrel_mcp_types::Message;
use tokio::sync::mpsc;

use super::{Frame, MessageReader, MessageWriter, Transport};
use crate::Error;

/// How many messages each direction of [`memory()`] buffers before a sender waits.
pub const DEFAULT_CAPACITY: usize = 64;

/// Returns a connected pair: what one end sends, the other receives.
///
/// Each direction is a bounded channel of [`DEFAULT_CAPACITY`] messages. Dropping or closing one
/// end's writer ends the other end's input.
pub fn memory() -> (MemoryTransport, MemoryTransport) {
    memory_with_capacity(DEFAULT_CAPACITY)
}

/// Like [`memory()`], with `capacity` messages buffered per direction (at least one).
pub fn memory_with_capacity(capacity: usize) -> (MemoryTransport, MemoryTransport) {
    let capacity = capacity.max(1);
    let (a_tx, a_rx) = mpsc::channel(capacity);
    let (b_tx, b_rx) = mpsc::channel(capacity);
    let a = MemoryTransport {
        reader: MemoryReader { rx: b_rx },
        writer: MemoryWriter { tx: Some(a_tx) },
    };
    let b = MemoryTransport {
        reader: MemoryReader { rx: a_rx },
        writer: MemoryWriter { tx: Some(b_tx) },
    };
    (a, b)
}

/// One end of a [`memory()`] pair.
#[derive(Debug)]
pub struct MemoryTransport {
    reader: MemoryReader,
    writer: MemoryWriter,
}

impl Transport for MemoryTransport {
    type Reader = MemoryReader;
    type Writer = MemoryWriter;

    fn split(self) -> (MemoryReader, MemoryWriter) {
        (self.reader, self.writer)
    }

    fn passes_messages_as_they_are(&self) -> bool {
        true
    }
}

/// The receiving half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryReader {
    rx: mpsc::Receiver<Message>,
}

impl MessageReader for MemoryReader {
    /// Cancel-safe: a message is either returned or stays in the channel.
    async fn recv(&mut self) -> Result<Option<Frame>, Error> {
        Ok(self.rx.recv().await.map(Ok))
    }
}

/// The sending half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryWriter {
    tx: Option<mpsc::Sender<Message>>,
}

impl MessageWriter for MemoryWriter {
    async fn send(&mut self, message: Message) -> Result<(), Error> {
        let tx = self.tx.as_ref().ok_or(Error::Closed)?;
        tx.send(message).await.map_err(|_| Error::Closed)
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.tx = None;
        Ok(())
    }
}
