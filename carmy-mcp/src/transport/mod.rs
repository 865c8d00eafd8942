//! Transports: how messages reach the wire. They know nothing of Carmy's runtime; any rmcp
//! transport serves an [`McpServer`](crate::McpServer), and this one adds the guards a byte
//! stream needs.

mod line;

pub(crate) use line::ToolsPage;
pub use line::{
    CallThread, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_OUTBOX_BYTES,
    LineTransport,
};
