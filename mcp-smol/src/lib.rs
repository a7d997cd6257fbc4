//! mcp-smol
