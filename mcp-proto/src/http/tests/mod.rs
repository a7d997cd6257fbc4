//! Tests for the HTTP pieces.

mod request;
mod response;
mod url;
