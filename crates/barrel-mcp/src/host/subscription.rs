//! Resource subscriptions through the host: [`Host::subscribe`] takes an exposed URI, subscribes
//! on the server behind it (in any revision, as [`Client::subscribe`] does), and hands out each
//! update with its URI exposed again.

use barrel_mcp_types::ResourceUpdatedParams;

use super::Host;
use crate::Error;
use crate::client::{Client, ResourceSubscription};

/// The updates of one resource of one of the host's servers, named by its exposed URI.
///
/// A subscription belongs to one connection: when that server disconnects, [`next`] returns
/// `None`, and the application subscribes again once the catalog shows the server back (see
/// [`Host::watch`]).
///
/// [`next`]: HostSubscription::next
#[derive(Debug)]
pub struct HostSubscription {
    exposed: String,
    client: Client,
    updates: ResourceSubscription,
}

impl HostSubscription {
    /// The subscribed URI, as the catalog exposes it.
    pub fn uri(&self) -> &str {
        &self.exposed
    }

    /// The next update (its `uri` the exposed one), or `None` once the server's connection or
    /// the subscription has ended. Cancel-safe; updates that came faster than they were taken
    /// may be folded into one, as with [`ResourceSubscription::next`].
    pub async fn next(&mut self) -> Option<ResourceUpdatedParams> {
        let mut update = self.updates.next().await?;
        update.uri.clone_from(&self.exposed);
        Some(update)
    }

    /// Ends the subscription: `resources/unsubscribe` in a session; in 2026-07-28 the listen
    /// request is cancelled.
    pub async fn unsubscribe(self) -> Result<(), Error> {
        if self.client.is_modern() {
            return Ok(());
        }
        self.client
            .unsubscribe_resource(self.updates.uri().to_owned())
            .await
    }
}

impl Host {
    /// Subscribes to the updates of the resource at an exposed URI (`prefix+uri`, as the
    /// catalog lists it or a template makes it). Fails when no server has that prefix, the
    /// server is not connected, or it does not offer subscriptions.
    pub async fn subscribe(&self, exposed: &str) -> Result<HostSubscription, Error> {
        let catalog = self.catalog();
        let (server, raw) = catalog.route_uri(exposed)?;
        let client = self.connected(server)?;
        let updates = client.subscribe(raw).await?;
        Ok(HostSubscription {
            exposed: exposed.to_owned(),
            client,
            updates,
        })
    }
}
