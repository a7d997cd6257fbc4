//! Typed failures of the response reader.

/// Why a response could not be read. Every one is final for the response, and the
/// connection must be closed (the framing is lost).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseError {
    /// The connection ended before any byte of a response arrived: the server closed an
    /// idle connection. A request that was sent on it may be retried on a new one.
    #[error("connection closed before a response began")]
    ConnectionClosed,
    /// The connection ended in the middle of a head or a body.
    #[error("connection closed in the middle of the response")]
    Truncated,
    /// A head (status line and headers) was longer than the limit.
    #[error("response head longer than {limit} bytes")]
    HeadTooLarge {
        /// [`super::HttpLimits::max_head_bytes`].
        limit: usize,
    },
    /// More header fields (or trailer fields) than the limit.
    #[error("more than {limit} header fields")]
    TooManyHeaders {
        /// [`super::HttpLimits::max_headers`].
        limit: usize,
    },
    /// The head is not HTTP/1.x syntax (bad status line, header name or value bytes).
    #[error("malformed response head: {reason}")]
    InvalidHead {
        /// What the parser disliked.
        reason: &'static str,
    },
    /// A status code below 100.
    #[error("invalid status code {status}")]
    InvalidStatus {
        /// The code received.
        status: u16,
    },
    /// `101 Switching Protocols`: an MCP client never asks for an upgrade.
    #[error("unexpected 101 Switching Protocols")]
    SwitchingProtocols,
    /// A `Content-Length` that is not a decimal number fitting in 64 bits.
    #[error("invalid Content-Length")]
    InvalidContentLength,
    /// Several `Content-Length` values that differ.
    #[error("conflicting Content-Length values")]
    ConflictingContentLength,
    /// A `Transfer-Encoding` other than exactly `chunked`.
    #[error("unsupported Transfer-Encoding")]
    UnsupportedTransferEncoding,
    /// `Transfer-Encoding` together with `Content-Length`, or in an HTTP/1.0 response:
    /// the framing is ambiguous (a response-splitting pattern), so it is refused.
    #[error("ambiguous message framing")]
    ConflictingFraming,
    /// A chunk-size line or chunk delimiter that is not valid chunked syntax.
    #[error("malformed chunked body: {reason}")]
    InvalidChunk {
        /// What was wrong.
        reason: &'static str,
    },
    /// A chunk size that does not fit in 64 bits.
    #[error("chunk size overflows 64 bits")]
    ChunkSizeOverflow,
    /// A chunk-size line longer than the limit.
    #[error("chunk-size line longer than {limit} bytes")]
    ChunkLineTooLong {
        /// [`super::HttpLimits::max_chunk_size_line`].
        limit: usize,
    },
    /// A trailer section longer than the limit.
    #[error("trailer section longer than {limit} bytes")]
    TrailersTooLarge {
        /// [`super::HttpLimits::max_trailer_bytes`].
        limit: usize,
    },
    /// A trailer section that is not header-field syntax.
    #[error("malformed trailer section: {reason}")]
    InvalidTrailer {
        /// What the parser disliked.
        reason: &'static str,
    },
    /// The body is (or announced it would be) longer than the limit. Bytes up to the
    /// limit may have been delivered already.
    #[error("response body longer than {limit} bytes")]
    BodyTooLarge {
        /// [`super::HttpLimits::max_body_bytes`].
        limit: u64,
    },
}

/// Why [`super::ResponseReader::reset_for_next`] refused to reuse the connection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReuseError {
    /// The current response has not ended (or failed).
    #[error("the current response has not ended")]
    NotFinished,
    /// The current response ended with a close verdict.
    #[error("the connection is not keep-alive")]
    NotKeepAlive,
    /// More bytes followed the response than the reader keeps.
    #[error("more than {limit} bytes followed the response")]
    LeftoverOverflow {
        /// [`super::HttpLimits::max_leftover_bytes`].
        limit: usize,
    },
}
