//! Paginated listings: one page at a time with [`Pager::next_page`], or everything with
//! [`Pager::collect_all`] up to [`ClientConfig::max_pages`](super::ClientConfig::max_pages).

use std::marker::PhantomData;

use barrel_mcp_types::method::names;
use barrel_mcp_types::{
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedParams, Prompt, Resource, ResourceTemplate, ServerCapabilities, Tool,
};
use serde::de::DeserializeOwned;

use super::Client;
use super::options::CallOptions;
use crate::{Error, Result};

/// A paginated list result: `tools/list`, `resources/list`, `resources/templates/list` or
/// `prompts/list`.
///
/// Example: [`Pager`].
pub trait Listing: DeserializeOwned + Send + 'static {
    /// The method.
    const METHOD: &'static str;
    /// What the list holds.
    type Item: Send;
    /// The capability it needs.
    #[doc(hidden)]
    fn advertised(capabilities: &ServerCapabilities) -> (bool, &'static str);
    /// The items and the cursor of the next page.
    fn into_page(self) -> (Vec<Self::Item>, Option<String>);
}

macro_rules! listing {
    ($result:ty, $method:ident, $item:ty, $field:ident, $cap:ident) => {
        impl Listing for $result {
            const METHOD: &'static str = names::$method;
            type Item = $item;
            fn advertised(capabilities: &ServerCapabilities) -> (bool, &'static str) {
                (capabilities.$cap.is_some(), stringify!($cap))
            }
            fn into_page(self) -> (Vec<$item>, Option<String>) {
                (self.$field, self.next_cursor)
            }
        }
    };
}

listing!(ListToolsResult, TOOLS_LIST, Tool, tools, tools);
listing!(
    ListResourcesResult,
    RESOURCES_LIST,
    Resource,
    resources,
    resources
);
listing!(
    ListResourceTemplatesResult,
    RESOURCES_TEMPLATES_LIST,
    ResourceTemplate,
    resource_templates,
    resources
);
listing!(ListPromptsResult, PROMPTS_LIST, Prompt, prompts, prompts);

/// Walks the pages of one listing. Get one with [`Client::pages`].
///
/// # Example
///
/// ```no_run
/// use barrel_mcp::client::Client;
/// use barrel_mcp::types::ListToolsResult;
///
/// # async fn run(client: Client) -> barrel_mcp::Result<()> {
/// // Page by page (a repeated cursor, or more than `max_pages` pages, is an error).
/// let mut pages = client.pages::<ListToolsResult>();
/// while let Some(tools) = pages.next_page().await? {
///     println!("a page of {}", tools.len());
/// }
/// // Or everything at once.
/// let prompts = client.list_all_prompts().await?;
/// // Or one page from a cursor of your own.
/// let first = client.list_resources(None).await?;
/// # let _ = (prompts, first);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Pager<L> {
    client: Client,
    cursor: Option<String>,
    pages: usize,
    done: bool,
    _listing: PhantomData<fn() -> L>,
}

impl<L: Listing> Pager<L> {
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            cursor: None,
            pages: 0,
            done: false,
            _listing: PhantomData,
        }
    }

    /// The next page's items, or `None` after the last page. Fails when the listing runs past
    /// [`ClientConfig::max_pages`](super::ClientConfig::max_pages) or a cursor repeats.
    ///
    /// Cancel safety: dropping the future cancels the request; the pager stays on the same page.
    ///
    /// Example: [`Pager`].
    pub async fn next_page(&mut self) -> Result<Option<Vec<L::Item>>> {
        if self.done {
            return Ok(None);
        }
        let max = self.client.config().max_pages;
        if self.pages >= max {
            return Err(Error::Protocol(format!(
                "{} has more than {max} pages (ClientConfig::max_pages)",
                L::METHOD
            )));
        }
        let page: L = self.client.list_page(self.cursor.clone()).await?;
        self.pages += 1;
        let (items, next) = page.into_page();
        match next {
            Some(next) if Some(&next) == self.cursor.as_ref() => {
                return Err(Error::Protocol(format!(
                    "{} returned the same cursor twice",
                    L::METHOD
                )));
            }
            Some(next) => self.cursor = Some(next),
            None => self.done = true,
        }
        Ok(Some(items))
    }

    /// Every remaining item, page after page.
    ///
    /// Example: [`Pager`].
    pub async fn collect_all(mut self) -> Result<Vec<L::Item>> {
        let mut items = Vec::new();
        while let Some(page) = self.next_page().await? {
            items.extend(page);
        }
        Ok(items)
    }
}

impl Client {
    /// One page of a listing, from `cursor` (the first page when `None`).
    ///
    /// Example: [`Pager`].
    pub async fn list_page<L: Listing>(&self, cursor: Option<String>) -> Result<L> {
        let (advertised, what) = L::advertised(&self.capabilities());
        self.require(advertised, what)?;
        let params = serde_json::to_value(PaginatedParams { cursor, meta: None })?;
        let result = self
            .cached_send(L::METHOD, params, |params| async move {
                let result = self
                    .send(L::METHOD, Some(params), &CallOptions::new())
                    .await?;
                Ok((result, true))
            })
            .await?;
        super::calls::decode(L::METHOD, result)
    }

    /// A pager over every page of a listing.
    ///
    /// Example: [`Pager`].
    pub fn pages<L: Listing>(&self) -> Pager<L> {
        Pager::new(self.clone())
    }

    /// One page of `tools/list`.
    ///
    /// Example: [`Pager`].
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult> {
        self.list_page(cursor).await
    }

    /// Every tool, across pages.
    ///
    /// Example: [`Pager`].
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>> {
        self.pages::<ListToolsResult>().collect_all().await
    }

    /// One page of `resources/list`.
    ///
    /// Example: [`Pager`].
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<ListResourcesResult> {
        self.list_page(cursor).await
    }

    /// Every resource, across pages.
    ///
    /// Example: [`Pager`].
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>> {
        self.pages::<ListResourcesResult>().collect_all().await
    }

    /// One page of `resources/templates/list`.
    ///
    /// Example: [`Pager`].
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult> {
        self.list_page(cursor).await
    }

    /// Every resource template, across pages.
    ///
    /// Example: [`Pager`].
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.pages::<ListResourceTemplatesResult>()
            .collect_all()
            .await
    }

    /// One page of `prompts/list`.
    ///
    /// Example: [`Pager`].
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult> {
        self.list_page(cursor).await
    }

    /// Every prompt, across pages.
    ///
    /// Example: [`Pager`].
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>> {
        self.pages::<ListPromptsResult>().collect_all().await
    }
}
