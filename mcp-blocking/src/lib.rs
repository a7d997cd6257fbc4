//! mcp-blocking
