//! The server machine.
