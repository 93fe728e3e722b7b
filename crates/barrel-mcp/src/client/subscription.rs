//! Resource subscriptions delivered to a subscriber: [`Client::subscribe`] returns a
//! [`ResourceSubscription`] that yields each update of one resource.
//!
//! In a session the client sends `resources/subscribe`. In 2026-07-28 it opens a
//! `subscriptions/listen` for the resource, waits for the server's acknowledgement, and keeps
//! the request open for as long as the subscription lives; dropping the subscription cancels it.

use barrel_mcp_types::{ResourceUpdatedParams, SubscriptionFilter};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::Client;
use super::dispatch::Event;
use super::options::CallOptions;
use crate::peer::Peer;
use crate::{Error, Result};

/// The updates of one resource. Dropping it ends a 2026-07-28 subscription; in a session call
/// [`Client::unsubscribe_resource`] to stop the server sending them.
#[derive(Debug)]
pub struct ResourceSubscription {
    uri: String,
    events: broadcast::Receiver<Event>,
    peer: Peer,
    /// The open `subscriptions/listen` (2026-07-28).
    listen: Option<JoinHandle<Result<()>>>,
}

impl Drop for ResourceSubscription {
    fn drop(&mut self) {
        if let Some(listen) = &self.listen {
            // Dropping the request future sends notifications/cancelled for it.
            listen.abort();
        }
    }
}

impl ResourceSubscription {
    /// The subscribed URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The next update, or `None` once the connection or the subscription has ended. Updates
    /// that came faster than they were taken may be skipped (never more than the newest 64 are
    /// kept), which loses nothing a reader needs: each says only "read it again".
    ///
    /// Cancel-safe.
    pub async fn next(&mut self) -> Option<ResourceUpdatedParams> {
        loop {
            let event = tokio::select! {
                event = self.events.recv() => event,
                () = self.peer.closed() => return None,
            };
            match event {
                Ok(Event::Updated(update)) if update.uri == self.uri => return Some(update),
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return None,
            }
            if self.listen.as_ref().is_some_and(JoinHandle::is_finished) {
                return None;
            }
        }
    }
}

impl Client {
    /// Subscribes to the updates of the resource at `uri`, in any revision. Fails when the
    /// server does not advertise `resources.subscribe`, or (2026-07-28) when the server ends
    /// the listen request before acknowledging it.
    pub async fn subscribe(&self, uri: impl Into<String>) -> Result<ResourceSubscription> {
        let uri = uri.into();
        self.require(self.can_subscribe(), "resources.subscribe")?;
        let mut events = self.inner.events.subscribe();
        if !self.is_modern() {
            self.subscribe_resource(uri.clone()).await?;
            return Ok(ResourceSubscription {
                uri,
                events,
                peer: self.peer().clone(),
                listen: None,
            });
        }
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![uri.clone()]),
            ..SubscriptionFilter::default()
        };
        let client = self.clone();
        let mut listen = tokio::spawn(async move {
            client
                .subscriptions_listen(filter, CallOptions::new())
                .await
                .map(drop)
        });
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(Event::Acknowledged) => break,
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Err(Error::Closed),
                },
                ended = &mut listen => {
                    return Err(match ended {
                        Ok(Err(e)) => e,
                        Ok(Ok(())) => Error::Protocol(
                            "the server ended subscriptions/listen before acknowledging it".into(),
                        ),
                        Err(_) => Error::Cancelled,
                    });
                }
            }
        }
        Ok(ResourceSubscription {
            uri,
            events,
            peer: self.peer().clone(),
            listen: Some(listen),
        })
    }
}
