//! [`ProtectedResource`]: the RFC 9728 protected-resource metadata document.

/// The RFC 9728 metadata of the MCP endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtectedResource {
    /// The endpoint's absolute URL.
    pub resource: String,
}
