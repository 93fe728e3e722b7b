//! The barrel-mcp examples; each example file says how to run it.
