//! One authorization request on a connection of its own, without IO: [`Exchange`]
//! renders the request's bytes and reads its one response, body capped. The HTTP client
//! machine runs the flow's requests this way; a driver that must send a lone request
//! (revocation when a person logs out) uses it directly.

use super::flow::{AuthRequest, AuthRequestId, AuthResponse};
use crate::client::Origin;
use crate::http::{HttpLimits, RequestHead, ResponseEvent, ResponseHead, ResponseReader};

/// One request and its response on a fresh connection (`Connection: close`).
///
/// ```
/// use mcp_proto::auth::{Exchange, revocation_requests, Credentials};
///
/// let json = r#"{"server_url": "http://127.0.0.1:1/mcp", "resource": "r", "issuer": "i",
///   "access_token": "a", "revocation_endpoint": "http://127.0.0.1:2/revoke"}"#;
/// let creds: Credentials = serde_json::from_str(json).unwrap();
/// let request = revocation_requests(&creds, false).unwrap().remove(0);
/// let (mut exchange, bytes) = Exchange::start(request, "doc/1.0", 64 * 1024).unwrap();
/// assert!(bytes.starts_with(b"POST /revoke HTTP/1.1\r\nHost: 127.0.0.1:2\r\n"));
/// assert_eq!(exchange.origin().port(), 2);
/// // What the socket gave back:
/// let done = exchange.handle_input(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
/// assert_eq!(done.unwrap().unwrap().1.status, 200);
/// ```
#[derive(Debug)]
pub struct Exchange {
    request: AuthRequestId,
    origin: Origin,
    reader: ResponseReader,
    head: Option<ResponseHead>,
    body: Vec<u8>,
}

impl Exchange {
    /// The exchange of `request`, and the bytes to write once connected.
    ///
    /// # Errors
    ///
    /// Why the request cannot be written (a header value that is not one).
    pub fn start(
        request: AuthRequest,
        user_agent: &str,
        max_body: usize,
    ) -> Result<(Exchange, Vec<u8>), String> {
        let mut head = RequestHead::for_endpoint(request.method, &request.url)
            .with_header("User-Agent", user_agent)
            .with_header("Connection", "close");
        for (k, v) in request.headers {
            head = head.with_header(k, v);
        }
        let mut bytes = Vec::new();
        let len = request.body.as_ref().map(Vec::len);
        head.write(len, &mut bytes).map_err(|e| e.to_string())?;
        bytes.extend_from_slice(request.body.as_deref().unwrap_or_default());
        let mut origin = Origin::of(&request.url);
        if request.public_only {
            origin = origin.into_public_only();
        }
        let limits = HttpLimits {
            max_body_bytes: Some(max_body as u64),
            ..HttpLimits::default()
        };
        let exchange = Exchange {
            request: request.id,
            origin,
            reader: ResponseReader::new(limits, request.method),
            head: None,
            body: Vec::new(),
        };
        Ok((exchange, bytes))
    }

    /// Where to connect (see [`Origin::public_only`]).
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The request this exchange carries.
    #[must_use]
    pub fn request(&self) -> AuthRequestId {
        self.request
    }

    /// Bytes read from the connection. `Some` once the response is complete (or
    /// cannot be read): then close the connection.
    pub fn handle_input(
        &mut self,
        data: &[u8],
    ) -> Option<Result<(AuthRequestId, AuthResponse), String>> {
        self.reader.handle_input(data);
        self.drain()
    }

    /// The connection ended.
    pub fn handle_eof(&mut self) -> Option<Result<(AuthRequestId, AuthResponse), String>> {
        self.reader.handle_eof();
        self.drain()
    }

    /// Bytes held.
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        self.reader.retained_bytes() + self.body.capacity()
    }

    fn drain(&mut self) -> Option<Result<(AuthRequestId, AuthResponse), String>> {
        loop {
            match self.reader.poll_event()? {
                ResponseEvent::Head(h) => self.head = Some(h),
                ResponseEvent::Body(b) => self.body.extend_from_slice(&b),
                ResponseEvent::End { .. } => {
                    let head = self.head.take();
                    let response = AuthResponse {
                        status: head.as_ref().map_or(0, |h| h.status),
                        headers: head.map_or_else(Vec::new, |h| {
                            h.headers()
                                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                                .collect()
                        }),
                        body: std::mem::take(&mut self.body),
                    };
                    return Some(Ok((self.request, response)));
                }
                ResponseEvent::Error(e) => return Some(Err(e.to_string())),
            }
        }
    }
}
