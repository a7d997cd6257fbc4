//! The `_meta` of the last request read over [`Server::handle_json`] (or posted to the
//! [`HttpEndpoint`](super::http::HttpEndpoint) that holds the server), kept for the next.
//!
//! A 2026-07-28 client sends the same `_meta` (protocol version, capabilities, client
//! information) with every request, byte for byte. Read into values, it is most of what
//! the server parses per request, and dropping it again is a good part of the rest. So
//! after a request is handled, its `_meta` value goes back here with the text it was read
//! from, and the next request whose `_meta` has exactly that text takes the value instead
//! of reading it again. Any other text is read as usual and replaces what is kept.
//!
//! What is kept is always the value of its text: the value moves into a request's params
//! and back out of the same request's params, and the handling of a request never
//! changes the `_meta` it was given. At most [`MAX_TEXT`] bytes of text are kept.

use serde_json::Value;
use serde_json::value::RawValue;

use super::{Params, Server};
use crate::jsonrpc::{META, SplitParams};

/// Runs `serve` on `host` with the params of a split request, its `_meta` lent from (and
/// then given back to) the cache of the server `server(host)` names: the one way both the
/// stdio and the HTTP path read a request. `None`, without running `serve`, when the
/// `_meta` text does not read as a value (the caller takes the general path).
pub(crate) fn with_lent_meta<H, R>(
    host: &mut H,
    server: impl Fn(&mut H) -> &mut Server,
    split: SplitParams<'_>,
    serve: impl FnOnce(&mut H, &mut Params) -> R,
) -> Option<R> {
    let (mut params, meta) = (split.members, split.meta);
    if meta.is_some_and(|text| !server(host).lend_meta(&mut params, text)) {
        return None;
    }
    let served = serve(host, &mut params);
    if let Some(text) = meta {
        server(host).keep_meta(&mut params, text);
    }
    Some(served)
}

/// The longest `_meta` text worth keeping (longer ones are read every time).
const MAX_TEXT: usize = 4096;

/// A `_meta` text and, while no request holds it, its value (with the member's key, so
/// that putting it back into params allocates nothing).
#[derive(Debug)]
pub(super) struct MetaCache {
    text: Box<str>,
    entry: Option<(String, Value)>,
}

impl Server {
    /// Puts the `_meta` whose text is `text` into `params`: the value kept from the last
    /// request when its text was the same, read otherwise. `false` when the text does not
    /// read as a value (beyond `serde_json`'s own nesting bound): the caller then takes
    /// the general path, which names the error.
    fn lend_meta(&mut self, params: &mut Params, text: &RawValue) -> bool {
        let kept = self.meta.as_mut().filter(|m| *m.text == *text.get());
        let (key, value) = match kept.and_then(|m| m.entry.take()) {
            Some(entry) => entry,
            None => match serde_json::from_str(text.get()) {
                Ok(value) => (META.to_owned(), value),
                Err(_) => return false,
            },
        };
        params.insert(key, value);
        true
    }

    /// Takes back the `_meta` of a handled request, read from (or lent for) `text`.
    fn keep_meta(&mut self, params: &mut Params, text: &RawValue) {
        let text = text.get();
        if text.len() > MAX_TEXT {
            return;
        }
        let Some(entry) = params.remove_entry(META) else {
            return;
        };
        match &mut self.meta {
            Some(kept) if *kept.text == *text => kept.entry = Some(entry),
            _ => {
                self.meta = Some(MetaCache {
                    text: text.into(),
                    entry: Some(entry),
                });
            }
        }
    }
}

#[cfg(test)]
impl Server {
    /// Whether the value of the `_meta` written as `text` is kept for the next request.
    pub(super) fn keeps_meta(&self, text: &str) -> bool {
        self.meta
            .as_ref()
            .is_some_and(|m| *m.text == *text && m.entry.is_some())
    }
}
