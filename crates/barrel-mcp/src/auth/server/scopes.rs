//! [`ScopePolicy`]: the scopes each operation needs.

/// The scopes each operation needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScopePolicy {}
