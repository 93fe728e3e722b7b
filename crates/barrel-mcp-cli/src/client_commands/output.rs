//! Output of the client commands on stdout: a tool result, any value as pretty JSON, and a
//! content block as readable text.

use barrel_mcp::types::{ContentBlock, ResourceContents};
use serde::Serialize;

/// A tool result: JSON, or each content block readable (the structured content when there is
/// no block).
pub(super) fn print_tool_result(
    result: &barrel_mcp::types::CallToolResult,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        return print_json(result);
    }
    for block in &result.content {
        out!("{}", describe(block));
    }
    if result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        out!("{}", serde_json::to_string_pretty(structured)?);
    }
    Ok(())
}

pub(crate) fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    out!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// One content block as readable text.
pub(super) fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image {}, {} bytes of base64]", i.mime_type, i.data.len())
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}, {} bytes of base64]", a.mime_type, a.data.len())
        }
        ContentBlock::ResourceLink(l) => format!("[link {} {}]", l.name, l.uri),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => format!("[resource {}]\n{}", t.uri, t.text),
            ResourceContents::Blob(b) => {
                format!("[resource {}, {} bytes of base64]", b.uri, b.blob.len())
            }
        },
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}
