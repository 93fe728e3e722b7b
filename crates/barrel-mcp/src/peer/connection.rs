//! The task that owns a connection: the read loop and the write loop, side by side.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::Queued;
use super::shared::Shared;
use super::{Handler, Peer, inbound};
use crate::Error;
use crate::transport::{MessageReader, MessageWriter};

/// The most messages handed to the transport in one batch.
const BATCH: usize = 64;

pub(super) async fn run<R: MessageReader, W: MessageWriter>(
    reader: R,
    writer: W,
    outbound: mpsc::Receiver<Queued>,
    handler: Arc<dyn Handler>,
    peer: Peer,
) -> Result<(), Error> {
    let shared = &peer.shared;
    let read = async {
        let result = inbound::read_loop(reader, &*handler, &peer).await;
        match &result {
            // The input ended: let admitted requests finish and be answered, in time.
            Ok(()) if !shared.closed.is_cancelled() => shared.drain().await,
            Ok(()) => {}
            Err(error) => tracing::debug!(%error, "reading the transport failed"),
        }
        shared.shutdown();
        result
    };
    let write = async {
        let result = write_loop(writer, outbound, shared).await;
        if let Err(error) = &result {
            tracing::debug!(%error, "writing the transport failed");
        }
        shared.shutdown();
        result
    };
    let (read, write) = tokio::join!(read, write);
    handler.on_close();
    shared.handlers.stop(shared.config.handler_grace).await;
    read.and(write)
}

/// Writes queued messages in order. Once the connection ends, writes what is already queued
/// (within [`PeerConfig::close_grace`](super::PeerConfig::close_grace)) and closes the transport.
/// Messages that are waiting together go to the transport as one batch (at most `BATCH`).
async fn write_loop<W: MessageWriter>(
    mut writer: W,
    mut outbound: mpsc::Receiver<Queued>,
    shared: &Shared,
) -> Result<(), Error> {
    let written = async {
        loop {
            let message = tokio::select! {
                biased;
                message = outbound.recv() => message,
                () = shared.closed.cancelled() => None,
            };
            let Some(message) = message else { break };
            // What else is waiting goes with it, in one write where the transport can.
            match outbound.try_recv() {
                Err(_) => writer.send_outgoing(*message).await?,
                Ok(next) => {
                    let mut batch = Vec::with_capacity(BATCH);
                    batch.push(*message);
                    batch.push(*next);
                    while batch.len() < BATCH {
                        match outbound.try_recv() {
                            Ok(more) => batch.push(*more),
                            Err(_) => break,
                        }
                    }
                    // Boxed: the loop's own future (held by every idle connection) stays small.
                    Box::pin(writer.send_batch(batch)).await?;
                }
            }
        }
        while let Ok(message) = outbound.try_recv() {
            writer.send_outgoing(*message).await?;
        }
        writer.close().await
    };
    let grace = async {
        shared.closed.cancelled().await;
        tokio::time::sleep(shared.config.close_grace).await;
    };
    tokio::select! {
        result = written => result,
        () = grace => {
            tracing::debug!("gave up writing to a closed connection");
            Ok(())
        }
    }
}
