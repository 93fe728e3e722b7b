//! Shaping output down to what a protocol revision has.
//!
//! The types of this crate hold the union of every revision. Before a value goes to a peer that
//! speaks an older (or different) revision, [`Shape::shape`] removes what that revision lacks. The
//! rules ask only [`ProtocolVersion::supports`] with a [`Feature`], never compare versions.
//!
//! | Feature missing | What [`Shape`] does |
//! |---|---|
//! | [`Feature::CacheHints`] | drops `ttlMs` and `cacheScope` from `server/discover`, the four list results and `resources/read` |
//! | [`Feature::Titles`] | drops `title` from tools, resources, templates, resource links, prompts, prompt arguments, implementations and `ref/prompt` |
//! | [`Feature::StructuredContent`] | drops `Tool.outputSchema` and `CallToolResult.structuredContent` (the text content stays) |
//! | [`Feature::ToolAnnotations`] | drops `Tool.annotations` |
//! | [`Feature::Icons`] | drops `icons` everywhere, and `websiteUrl` and `description` from implementations |
//! | [`Feature::CoreTasks`] | drops `Tool.execution`, the `tasks` capabilities and the `task` member of params |
//! | [`Feature::AudioContent`] | replaces an `audio` block by a `text` block naming its MIME type (the data is dropped) |
//! | [`Feature::ResourceLinks`] | replaces a `resource_link` block by a `text` block with its name, URI and description |
//! | [`Feature::MetaEverywhere`] | drops `_meta` from content blocks, tools, resources, templates, prompts, roots and resource contents (results keep theirs) |
//! | [`Feature::AnnotationsLastModified`] | drops `annotations.lastModified` |
//! | [`Feature::CompletionsCapability`] | drops the `completions` server capability |
//! | [`Feature::Extensions`] | drops the `extensions` capabilities |
//! | [`Feature::RootsListChanged`] | drops `roots.listChanged` from client capabilities |
//! | [`Feature::Elicitation`] | drops the `elicitation` client capability |
//! | [`Feature::UrlElicitation`] | reduces `elicitation` to `{}` when form mode is supported, else drops it |
//! | [`Feature::SamplingTools`] | drops `sampling.context`/`sampling.tools`, `tools`/`toolChoice` of sampling requests and `_meta` of sampling messages; a one-block content array becomes that block (longer arrays have no single-block form and are left alone) |
//! | [`Feature::MultiRoundTrip`] | drops `inputResponses` and `requestState` from params |
//! | [`Feature::ElicitationId`] | drops `elicitationId` from URL elicitations |
//! | [`Feature::ProgressMessage`] | drops `message` from progress notifications |
//! | [`Feature::CompletionContext`] | drops `context` from `completion/complete` params |
//! | [`Feature::ResultType`] | [`stamp_result_type`] adds or removes `resultType` on a raw result |
//!
//! Replacing audio and resource-link blocks by text keeps a tool's answer readable by an older
//! client instead of failing its decoding of an unknown block type, at the price of the payload.

use serde_json::Value;

use crate::completion::{CompleteParams, CompleteResult, CompletionReference};
use crate::content::ResourceLink;
use crate::content::{Annotations, ContentBlock, EmbeddedResource, TextContent};
use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::lifecycle::{
    ClientCapabilities, DiscoverResult, ElicitationCapability, EmptyResult, Implementation,
    InitializeParams, InitializeResult, ServerCapabilities,
};
use crate::mrtr::{InputRequest, InputRequiredResult, ResultType};
use crate::progress::ProgressParams;
use crate::prompts::GetPromptParams;
use crate::prompts::{GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate,
};
use crate::roots::{ListRootsResult, Root};
use crate::sampling::{
    CreateMessageParams, CreateMessageResult, SamplingContent, SamplingContentBlock,
    SamplingMessage,
};
use crate::tools::{CallToolParams, CallToolResult, ListToolsResult, Tool};
use crate::version::{Feature, ProtocolVersion};

#[cfg(test)]
mod tests;

/// Removes from a value what a protocol revision lacks; see the module docs for every rule.
pub trait Shape {
    /// Shapes the value in place for `version`.
    fn shape(&mut self, version: ProtocolVersion);

    /// Shapes the value for `version` and returns it.
    fn shaped(mut self, version: ProtocolVersion) -> Self
    where
        Self: Sized,
    {
        self.shape(version);
        self
    }
}

impl<T: Shape> Shape for Vec<T> {
    fn shape(&mut self, version: ProtocolVersion) {
        self.iter_mut().for_each(|t| t.shape(version));
    }
}

impl<T: Shape> Shape for Option<T> {
    fn shape(&mut self, version: ProtocolVersion) {
        if let Some(t) = self {
            t.shape(version);
        }
    }
}

/// Adds `"resultType": "complete"` to a raw result object when `version` has result types and the
/// member is absent, and removes the member when it does not.
pub fn stamp_result_type(result: &mut Value, version: ProtocolVersion) {
    let Some(object) = result.as_object_mut() else {
        return;
    };
    if version.supports(Feature::ResultType) {
        object
            .entry(ResultType::KEY)
            .or_insert_with(|| Value::from(ResultType::Complete.as_str()));
    } else {
        object.remove(ResultType::KEY);
    }
}

/// Clears `field` when `version` lacks `feature`.
fn keep_if<T>(field: &mut Option<T>, version: ProtocolVersion, feature: Feature) {
    if !version.supports(feature) {
        *field = None;
    }
}

macro_rules! cache_hints {
    ($($ty:ty),*) => {$(
        impl Shape for $ty {
            fn shape(&mut self, version: ProtocolVersion) {
                keep_if(&mut self.ttl_ms, version, Feature::CacheHints);
                keep_if(&mut self.cache_scope, version, Feature::CacheHints);
                self.shape_items(version);
            }
        }
    )*};
}

cache_hints!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    ReadResourceResult,
    DiscoverResult
);

trait ShapeItems {
    fn shape_items(&mut self, version: ProtocolVersion);
}

impl ShapeItems for ListToolsResult {
    fn shape_items(&mut self, version: ProtocolVersion) {
        self.tools.shape(version);
    }
}

impl ShapeItems for ListResourcesResult {
    fn shape_items(&mut self, version: ProtocolVersion) {
        self.resources.shape(version);
    }
}

impl ShapeItems for ListResourceTemplatesResult {
    fn shape_items(&mut self, version: ProtocolVersion) {
        self.resource_templates.shape(version);
    }
}

impl ShapeItems for ListPromptsResult {
    fn shape_items(&mut self, version: ProtocolVersion) {
        self.prompts.shape(version);
    }
}

impl ShapeItems for ReadResourceResult {
    fn shape_items(&mut self, version: ProtocolVersion) {
        self.contents.shape(version);
    }
}

impl ShapeItems for DiscoverResult {
    fn shape_items(&mut self, version: ProtocolVersion) {
        self.capabilities.shape(version);
    }
}

impl Shape for Implementation {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.title, version, Feature::Titles);
        keep_if(&mut self.icons, version, Feature::Icons);
        keep_if(&mut self.website_url, version, Feature::Icons);
        keep_if(&mut self.description, version, Feature::Icons);
    }
}

impl Shape for ServerCapabilities {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(
            &mut self.completions,
            version,
            Feature::CompletionsCapability,
        );
        keep_if(&mut self.tasks, version, Feature::CoreTasks);
        keep_if(&mut self.extensions, version, Feature::Extensions);
    }
}

impl Shape for ClientCapabilities {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.tasks, version, Feature::CoreTasks);
        keep_if(&mut self.extensions, version, Feature::Extensions);
        if let Some(roots) = &mut self.roots {
            keep_if(&mut roots.list_changed, version, Feature::RootsListChanged);
        }
        if let Some(sampling) = &mut self.sampling {
            keep_if(&mut sampling.context, version, Feature::SamplingTools);
            keep_if(&mut sampling.tools, version, Feature::SamplingTools);
        }
        if !version.supports(Feature::UrlElicitation) {
            self.elicitation = self
                .supports_form_elicitation()
                .then(ElicitationCapability::default);
        }
        keep_if(&mut self.elicitation, version, Feature::Elicitation);
    }
}

impl Shape for InitializeParams {
    fn shape(&mut self, version: ProtocolVersion) {
        self.capabilities.shape(version);
        self.client_info.shape(version);
    }
}

impl Shape for InitializeResult {
    fn shape(&mut self, version: ProtocolVersion) {
        self.capabilities.shape(version);
        self.server_info.shape(version);
    }
}

impl Shape for EmptyResult {
    fn shape(&mut self, _version: ProtocolVersion) {}
}

impl Shape for Annotations {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(
            &mut self.last_modified,
            version,
            Feature::AnnotationsLastModified,
        );
    }
}

impl Shape for ContentBlock {
    fn shape(&mut self, version: ProtocolVersion) {
        if let Self::Audio(audio) = self
            && !version.supports(Feature::AudioContent)
        {
            *self = Self::Text(TextContent {
                text: format!("[audio content ({}) omitted]", audio.mime_type),
                annotations: audio.annotations.take(),
                meta: audio.meta.take(),
            });
        }
        if let Self::ResourceLink(link) = self
            && !version.supports(Feature::ResourceLinks)
        {
            *self = Self::Text(resource_link_text(link));
        }
        let (annotations, meta) = match self {
            Self::Text(c) => (&mut c.annotations, &mut c.meta),
            Self::Image(c) => (&mut c.annotations, &mut c.meta),
            Self::Audio(c) => (&mut c.annotations, &mut c.meta),
            Self::ResourceLink(c) => {
                keep_if(&mut c.title, version, Feature::Titles);
                keep_if(&mut c.icons, version, Feature::Icons);
                (&mut c.annotations, &mut c.meta)
            }
            Self::Resource(c) => {
                c.resource.shape(version);
                (&mut c.annotations, &mut c.meta)
            }
        };
        annotations.shape(version);
        keep_if(meta, version, Feature::MetaEverywhere);
    }
}

/// The text block that stands for a resource link in revisions without resource links.
fn resource_link_text(link: &mut ResourceLink) -> TextContent {
    let name = link.title.as_deref().unwrap_or(&link.name);
    let mut text = format!("[resource: {name} <{}>]", link.uri);
    if let Some(description) = &link.description {
        text.push(' ');
        text.push_str(description);
    }
    TextContent {
        text,
        annotations: link.annotations.take(),
        meta: link.meta.take(),
    }
}

impl Shape for EmbeddedResource {
    fn shape(&mut self, version: ProtocolVersion) {
        self.resource.shape(version);
        self.annotations.shape(version);
        keep_if(&mut self.meta, version, Feature::MetaEverywhere);
    }
}

impl Shape for ResourceContents {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(self.meta_mut(), version, Feature::MetaEverywhere);
    }
}

impl Shape for Tool {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.title, version, Feature::Titles);
        keep_if(&mut self.output_schema, version, Feature::StructuredContent);
        keep_if(&mut self.annotations, version, Feature::ToolAnnotations);
        keep_if(&mut self.icons, version, Feature::Icons);
        keep_if(&mut self.execution, version, Feature::CoreTasks);
        keep_if(&mut self.meta, version, Feature::MetaEverywhere);
    }
}

impl Shape for CallToolResult {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(
            &mut self.structured_content,
            version,
            Feature::StructuredContent,
        );
        self.content.shape(version);
    }
}

impl Shape for CallToolParams {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.task, version, Feature::CoreTasks);
        keep_if(&mut self.input_responses, version, Feature::MultiRoundTrip);
        keep_if(&mut self.request_state, version, Feature::MultiRoundTrip);
    }
}

impl Shape for ReadResourceParams {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.input_responses, version, Feature::MultiRoundTrip);
        keep_if(&mut self.request_state, version, Feature::MultiRoundTrip);
    }
}

impl Shape for GetPromptParams {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.input_responses, version, Feature::MultiRoundTrip);
        keep_if(&mut self.request_state, version, Feature::MultiRoundTrip);
    }
}

impl Shape for Resource {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.title, version, Feature::Titles);
        keep_if(&mut self.icons, version, Feature::Icons);
        keep_if(&mut self.meta, version, Feature::MetaEverywhere);
        self.annotations.shape(version);
    }
}

impl Shape for ResourceTemplate {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.title, version, Feature::Titles);
        keep_if(&mut self.icons, version, Feature::Icons);
        keep_if(&mut self.meta, version, Feature::MetaEverywhere);
        self.annotations.shape(version);
    }
}

impl Shape for Prompt {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.title, version, Feature::Titles);
        keep_if(&mut self.icons, version, Feature::Icons);
        keep_if(&mut self.meta, version, Feature::MetaEverywhere);
        self.arguments.shape(version);
    }
}

impl Shape for PromptArgument {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.title, version, Feature::Titles);
    }
}

impl Shape for PromptMessage {
    fn shape(&mut self, version: ProtocolVersion) {
        self.content.shape(version);
    }
}

impl Shape for GetPromptResult {
    fn shape(&mut self, version: ProtocolVersion) {
        self.messages.shape(version);
    }
}

impl Shape for CompleteParams {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.context, version, Feature::CompletionContext);
        if let CompletionReference::Prompt { title, .. } = &mut self.reference {
            keep_if(title, version, Feature::Titles);
        }
    }
}

impl Shape for CompleteResult {
    fn shape(&mut self, _version: ProtocolVersion) {}
}

impl Shape for Root {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.meta, version, Feature::MetaEverywhere);
    }
}

impl Shape for ListRootsResult {
    fn shape(&mut self, version: ProtocolVersion) {
        self.roots.shape(version);
    }
}

impl Shape for SamplingContentBlock {
    fn shape(&mut self, version: ProtocolVersion) {
        if let Self::Audio(audio) = self
            && !version.supports(Feature::AudioContent)
        {
            *self = Self::Text(TextContent {
                text: format!("[audio content ({}) omitted]", audio.mime_type),
                annotations: audio.annotations.take(),
                meta: None,
            });
        }
        match self {
            Self::Text(c) => keep_if(&mut c.meta, version, Feature::MetaEverywhere),
            Self::Image(c) => keep_if(&mut c.meta, version, Feature::MetaEverywhere),
            Self::Audio(c) => keep_if(&mut c.meta, version, Feature::MetaEverywhere),
            Self::ToolUse(_) => {}
            Self::ToolResult(c) => c.content.shape(version),
        }
    }
}

impl Shape for SamplingContent {
    fn shape(&mut self, version: ProtocolVersion) {
        if !version.supports(Feature::SamplingTools)
            && let Self::Many(blocks) = self
            && blocks.len() == 1
            && let Some(block) = blocks.pop()
        {
            *self = Self::Single(block);
        }
        match self {
            Self::Single(b) => b.shape(version),
            Self::Many(v) => v.shape(version),
        }
    }
}

impl Shape for SamplingMessage {
    fn shape(&mut self, version: ProtocolVersion) {
        self.content.shape(version);
        keep_if(&mut self.meta, version, Feature::SamplingTools);
    }
}

impl Shape for CreateMessageParams {
    fn shape(&mut self, version: ProtocolVersion) {
        self.messages.shape(version);
        keep_if(&mut self.tools, version, Feature::SamplingTools);
        keep_if(&mut self.tool_choice, version, Feature::SamplingTools);
        keep_if(&mut self.task, version, Feature::CoreTasks);
        self.tools.shape(version);
    }
}

impl Shape for CreateMessageResult {
    fn shape(&mut self, version: ProtocolVersion) {
        self.content.shape(version);
    }
}

impl Shape for ElicitRequestParams {
    fn shape(&mut self, version: ProtocolVersion) {
        match self {
            Self::Form(f) => keep_if(&mut f.task, version, Feature::CoreTasks),
            Self::Url(u) => {
                keep_if(&mut u.task, version, Feature::CoreTasks);
                keep_if(&mut u.elicitation_id, version, Feature::ElicitationId);
            }
        }
    }
}

impl Shape for ElicitResult {
    fn shape(&mut self, _version: ProtocolVersion) {}
}

impl Shape for ProgressParams {
    fn shape(&mut self, version: ProtocolVersion) {
        keep_if(&mut self.message, version, Feature::ProgressMessage);
    }
}

impl Shape for InputRequest {
    fn shape(&mut self, version: ProtocolVersion) {
        match self {
            Self::Elicit(p) => p.shape(version),
            Self::CreateMessage(p) => p.shape(version),
            Self::ListRoots => {}
        }
    }
}

impl Shape for InputRequiredResult {
    fn shape(&mut self, version: ProtocolVersion) {
        if let Some(requests) = &mut self.input_requests {
            requests.values_mut().for_each(|r| r.shape(version));
        }
    }
}
