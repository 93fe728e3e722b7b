//! Content blocks: what tools return and prompts hold (text, image, audio, resource links and
//! embedded resources), with their annotations.

use serde::{Deserialize, Serialize};

use crate::lifecycle::Icon;
use crate::meta::Meta;
use crate::resources::{Resource, ResourceContents};

/// A conversation role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    #[default]
    User,
    /// The assistant (the model).
    Assistant,
}

/// Hints about how to use or show an object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// One piece of content. Open: later revisions may add kinds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ContentBlock {
    /// `"text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `"image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `"audio"` (2025-03-26 and later).
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `"resource_link"` (2025-06-18 and later).
    #[serde(rename = "resource_link")]
    ResourceLink(ResourceLink),
    /// `"resource"`: an embedded resource.
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// An image block from base64 data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block from base64 data.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent::new(data, mime_type))
    }

    /// An image block from raw bytes.
    pub fn image_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent::from_bytes(bytes, mime_type))
    }

    /// An audio block from raw bytes.
    pub fn audio_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent::from_bytes(bytes, mime_type))
    }

    /// A link to a resource.
    pub fn resource_link(link: impl Into<ResourceLink>) -> Self {
        Self::ResourceLink(link.into())
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource::new(contents))
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The annotations of the block.
    pub fn annotations(&self) -> Option<&Annotations> {
        match self {
            Self::Text(c) => c.annotations.as_ref(),
            Self::Image(c) => c.annotations.as_ref(),
            Self::Audio(c) => c.annotations.as_ref(),
            Self::ResourceLink(c) => c.annotations.as_ref(),
            Self::Resource(c) => c.annotations.as_ref(),
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        Self::Text(c)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        Self::Image(c)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        Self::Audio(c)
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> Self {
        Self::ResourceLink(c)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        Self::Resource(c)
    }
}

/// Text content.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata (2025-06-18 and later).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextContent {
    /// Text content.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// Image content.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// The image MIME type.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata (2025-06-18 and later).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ImageContent {
    /// Image content from base64 data.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }

    /// Image content from raw bytes (base64-encoded here).
    pub fn from_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::new(encode_base64(bytes), mime_type)
    }

    /// The raw bytes; `None` when `data` is not valid base64.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        decode_base64(&self.data)
    }
}

/// Standard base64 with padding, as the spec's `data` and `blob` fields carry.
fn encode_base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode_base64(data: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// Audio content (2025-03-26 and later).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// The audio MIME type.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata (2025-06-18 and later).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl AudioContent {
    /// Audio content from base64 data.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }

    /// Audio content from raw bytes (base64-encoded here).
    pub fn from_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::new(encode_base64(bytes), mime_type)
    }

    /// The raw bytes; `None` when `data` is not valid base64.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        decode_base64(&self.data)
    }
}

/// A link to a resource the client may read (2025-06-18 and later); the fields of [`Resource`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceLink {
    /// A link with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            ..Self::default()
        }
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        Self {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            size: r.size,
            annotations: r.annotations,
            icons: r.icons,
            meta: r.meta,
        }
    }
}

impl From<ResourceLink> for Resource {
    fn from(r: ResourceLink) -> Self {
        Self {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            size: r.size,
            annotations: r.annotations,
            icons: r.icons,
            meta: r.meta,
        }
    }
}

/// A resource embedded in content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The resource contents.
    pub resource: ResourceContents,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata (2025-06-18 and later).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl EmbeddedResource {
    /// An embedded resource.
    pub fn new(resource: ResourceContents) -> Self {
        Self {
            resource,
            annotations: None,
            meta: None,
        }
    }
}

#[cfg(test)]
mod byte_tests {
    use super::*;

    #[test]
    fn bytes_round_trip_through_base64() {
        let png = [0x89, b'P', b'N', b'G', 0, 255];
        let image = ImageContent::from_bytes(&png, "image/png");
        // Checked with Python: base64.b64encode(bytes([0x89, 80, 78, 71, 0, 255])).
        assert_eq!(image.data, "iVBORwD/");
        assert_eq!(image.bytes().as_deref(), Some(&png[..]));
        let audio = ContentBlock::audio_bytes(b"RIFF", "audio/wav");
        match audio {
            ContentBlock::Audio(audio) => assert_eq!(audio.bytes().as_deref(), Some(&b"RIFF"[..])),
            other => panic!("{other:?}"),
        }
        assert_eq!(ImageContent::new("not base64!", "image/png").bytes(), None);
    }
}
