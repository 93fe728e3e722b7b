//! Resource subscriptions delivered to a subscriber: [`Client::subscribe`] returns a
//! [`ResourceSubscription`] that yields each update of one resource.
//!
//! In a session the client sends `resources/subscribe`. In 2026-07-28 it opens a
//! `subscriptions/listen` for the resource, waits for the server's acknowledgement naming the
//! resource, and keeps the request open (with no time limit) for as long as the subscription
//! lives; dropping the subscription, or the `subscribe` future before it resolves, cancels it.
//! When the server ends the listen, [`ResourceSubscription::next`] returns `None`.

use std::time::Duration;

use barrel_mcp_types::{ResourceUpdatedParams, SubscriptionFilter};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::task::JoinHandle;

use super::Client;
use super::dispatch::Event;
use super::options::CallOptions;
use crate::peer::Peer;
use crate::{Error, Result};

/// The updates of one resource. Dropping it ends a 2026-07-28 subscription; in a session call
/// [`Client::unsubscribe_resource`] to stop the server sending them.
///
/// # Example
///
/// ```no_run
/// use barrel_mcp::client::Client;
/// use barrel_mcp::types::ReadResourceParams;
///
/// # async fn run(client: Client) -> barrel_mcp::Result<()> {
/// let mut updates = client.subscribe("file:///notes.md").await?;
/// while let Some(update) = updates.next().await {
///     let fresh = client.read_resource(ReadResourceParams::new(update.uri)).await?;
///     println!("{} changed: {} contents", updates.uri(), fresh.contents.len());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ResourceSubscription {
    uri: String,
    events: broadcast::Receiver<Event>,
    peer: Peer,
    /// The open `subscriptions/listen` (2026-07-28); `None` once it has ended.
    listen: Option<AbortOnDrop>,
    /// Set once a 2026-07-28 listen has ended: no update comes any more.
    ended: bool,
}

/// A listen task, aborted (which cancels the request) when dropped.
#[derive(Debug)]
struct AbortOnDrop(JoinHandle<Result<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        // Dropping the request future sends notifications/cancelled for it.
        self.0.abort();
    }
}

impl ResourceSubscription {
    /// The subscribed URI.
    ///
    /// Example: [`ResourceSubscription`].
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The next update, or `None` once the connection or the subscription has ended. Updates
    /// that came faster than they were taken may be skipped (never more than the newest 64 are
    /// kept), which loses nothing a reader needs: each says only "read it again".
    ///
    /// Cancel-safe.
    ///
    /// Example: [`ResourceSubscription`].
    pub async fn next(&mut self) -> Option<ResourceUpdatedParams> {
        loop {
            if self.ended {
                // Updates that came before the listen's end are still handed out.
                return self.queued();
            }
            let event = tokio::select! {
                biased;
                event = self.events.recv() => event,
                () = self.peer.closed() => return None,
                () = listen_ended(self.listen.as_mut()) => {
                    self.listen = None;
                    self.ended = true;
                    continue;
                }
            };
            match event {
                Ok(Event::Updated(update)) if update.uri == self.uri => return Some(update),
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return None,
            }
        }
    }

    /// The next update already received for this resource, without waiting.
    fn queued(&mut self) -> Option<ResourceUpdatedParams> {
        loop {
            match self.events.try_recv() {
                Ok(Event::Updated(update)) if update.uri == self.uri => return Some(update),
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(_) => return None,
            }
        }
    }
}

/// Resolves when the listen task ends; never without one (a session subscription).
async fn listen_ended(listen: Option<&mut AbortOnDrop>) {
    match listen {
        Some(listen) => {
            let _ = (&mut listen.0).await;
        }
        None => std::future::pending().await,
    }
}

impl Client {
    /// Subscribes to the updates of the resource at `uri`, in any revision. Fails when the
    /// server does not advertise `resources.subscribe`, or (2026-07-28) when the server ends
    /// the listen request before acknowledging it.
    ///
    /// Example: [`ResourceSubscription`].
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
                ended: false,
            });
        }
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![uri.clone()]),
            ..SubscriptionFilter::default()
        };
        let client = self.clone();
        // Aborted if this future is dropped, or fails, before the subscription is handed out.
        let mut listen = AbortOnDrop(tokio::spawn(async move {
            let forever = CallOptions::new()
                .timeout(Duration::MAX)
                .max_total(Duration::MAX);
            client.subscriptions_listen(filter, forever).await.map(drop)
        }));
        // The acknowledgement of this listen is the one naming `uri` (others may be in flight).
        let acknowledged = async {
            loop {
                match events.recv().await {
                    Ok(Event::Acknowledged(uris)) if uris.contains(&uri) => return Ok(()),
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Err(Error::Closed),
                }
            }
        };
        let wait = self.config().peer.request_timeout;
        tokio::select! {
            // An acknowledgement already received counts, even if the listen has ended since.
            biased;
            acknowledged = tokio::time::timeout(wait, acknowledged) => match acknowledged {
                Ok(outcome) => outcome?,
                Err(_) => {
                    return Err(Error::Protocol(format!(
                        "the server did not acknowledge the subscription to {uri} within {wait:?}"
                    )));
                }
            },
            ended = &mut listen.0 => {
                return Err(match ended {
                    Ok(Err(e)) => e,
                    Ok(Ok(())) => Error::Protocol(
                        "the server ended subscriptions/listen before acknowledging it".into(),
                    ),
                    Err(_) => Error::Cancelled,
                });
            }
        }
        Ok(ResourceSubscription {
            uri,
            events,
            peer: self.peer().clone(),
            listen: Some(listen),
            ended: false,
        })
    }
}
