//! Bounds on what a peer can make the HTTP reader hold.

/// Limits for [`super::ResponseReader`].
///
/// Build one with [`HttpLimits::default`] (or [`HttpLimits::streaming`]) and change the
/// fields you need.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpLimits {
    /// Largest response head (status line, headers and the blank line), in bytes.
    /// Interim (1xx) heads are held to it one at a time. Default 64 KiB.
    pub max_head_bytes: usize,
    /// Most header fields in one head, and most fields in a chunked trailer. Default 100.
    pub max_headers: usize,
    /// Largest body, in bytes, counted as delivered (after chunked decoding). `None`
    /// means no total limit, for long-lived SSE streams; nothing is buffered either way,
    /// and chunk-size lines and trailers stay bounded. Default 16 MiB.
    pub max_body_bytes: Option<u64>,
    /// Longest chunk-size line (hex size, extensions, line end), in bytes. Default 4 KiB.
    pub max_chunk_size_line: usize,
    /// Largest chunked trailer section, including its final empty line. Default 16 KiB.
    pub max_trailer_bytes: usize,
    /// Bytes the reader keeps from input given after a response ended (in later calls;
    /// the rest of the call that ended it is always kept). Beyond this the connection
    /// cannot be reused. Default 64 KiB.
    pub max_leftover_bytes: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_head_bytes: 64 * 1024,
            max_headers: 100,
            max_body_bytes: Some(16 * 1024 * 1024),
            max_chunk_size_line: 4 * 1024,
            max_trailer_bytes: 16 * 1024,
            max_leftover_bytes: 64 * 1024,
        }
    }
}

impl HttpLimits {
    /// The defaults without a total body limit, for SSE responses that may stream for
    /// hours; each body chunk still passes through bounded buffers.
    #[must_use]
    pub fn streaming() -> Self {
        HttpLimits {
            max_body_bytes: None,
            ..HttpLimits::default()
        }
    }
}
