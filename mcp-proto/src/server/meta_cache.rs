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
//! Finding that the text is the same still took serde's walk over it to its end; a short
//! message whose `_meta` is the kept text is read with the text cut out instead
//! ([`Server::split_request`]).
//!
//! What is kept is always the value of its text: the value moves into a request's params
//! and back out of the same request's params, and the handling of a request never
//! changes the `_meta` it was given. At most [`MAX_TEXT`] bytes of text are kept.

use memchr::memmem::Finder;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Params, Server};
use crate::jsonrpc::{META, Request, SplitParams, decode_request_split};

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
    if split.meta_kept {
        // Found in place as the kept text: its value is lent as it is, and taken back.
        let entry = server(host).meta.as_mut().and_then(|m| m.entry.take())?;
        params.insert(entry.0, entry.1);
        let served = serve(host, &mut params);
        if let (Some(entry), Some(kept)) = (params.remove_entry(META), &mut server(host).meta) {
            kept.entry = Some(entry);
        }
        return Some(served);
    }
    if meta.is_some_and(|text| !server(host).lend_meta(&mut params, text)) {
        return None;
    }
    let served = serve(host, &mut params);
    if let Some(text) = meta {
        server(host).keep_meta(&mut params, text);
    }
    Some(served)
}

/// The longest message [`Server::split_request`] copies to find its `_meta` in place:
/// beyond it the copy would cost more than the scan it saves.
const MAX_COPIED: usize = 8 * 1024;

impl Server {
    /// [`decode_request_split`] of `json`, without reading its `_meta` when that is the
    /// text kept from the last request (`meta_kept`, the common case of a 2026 client).
    ///
    /// Read as a value, serde still walks the `_meta` text byte by byte to find its end
    /// (it has no way to skip it). So when a short message holds the kept text right
    /// after the first `"_meta":` in it, a copy of the message with that text replaced
    /// by `0` is read instead. The copy is the message with one valid JSON value
    /// replaced by another, so it reads as the message does; the shortcut is taken only
    /// when the reading put the `_meta` of the params exactly where the text began (the
    /// `0` at that offset of the copy), so a `"_meta"` elsewhere (in the arguments, a
    /// second one) cannot pass for it. Anything else reads the message itself.
    pub(crate) fn split_request<'j>(
        &mut self,
        json: &'j [u8],
    ) -> Option<(Request, SplitParams<'j>)> {
        if let Some(split) = self.split_with_kept_meta(json) {
            return Some(split);
        }
        decode_request_split(json)
    }

    fn split_with_kept_meta<'j>(&mut self, json: &'j [u8]) -> Option<(Request, SplitParams<'j>)> {
        let kept = self.meta.as_mut().filter(|m| m.entry.is_some())?;
        if json.len() > MAX_COPIED {
            return None;
        }
        let text = kept.text.as_bytes();
        let at = kept_meta_at(&kept.finder, json, text)?;
        let mut copy = std::mem::take(&mut kept.scratch);
        copy.clear();
        copy.extend_from_slice(&json[..at]);
        copy.push(b'0');
        copy.extend_from_slice(&json[at + text.len()..]);
        let split = decode_request_split(&copy).and_then(|(request, split)| {
            let placed = split.meta.map(|m| m.get().as_ptr()) == Some(copy[at..].as_ptr());
            placed.then(|| {
                let params = SplitParams {
                    members: split.members,
                    meta: None,
                    meta_kept: true,
                };
                (request, params)
            })
        });
        if let Some(kept) = &mut self.meta {
            kept.scratch = copy;
        }
        split
    }
}

/// Where `text` (an object's text) starts in `json` as the value after the first
/// `"_meta":` in it, when it does.
fn kept_meta_at(finder: &Finder<'static>, json: &[u8], text: &[u8]) -> Option<usize> {
    if text.first() != Some(&b'{') {
        return None;
    }
    let key = finder.find(json)?;
    let mut i = key + META_KEY.len();
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    while json.get(i).is_some_and(ws) {
        i += 1;
    }
    if json.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    while json.get(i).is_some_and(ws) {
        i += 1;
    }
    json[i..].starts_with(text).then_some(i)
}

/// The longest `_meta` text worth keeping (longer ones are read every time).
const MAX_TEXT: usize = 4096;

/// A `_meta` text and, while no request holds it, its value (with the member's key, so
/// that putting it back into params allocates nothing).
#[derive(Debug)]
pub(super) struct MetaCache {
    text: Box<str>,
    entry: Option<(String, Value)>,
    /// The buffer [`Server::split_request`] copies a message into, kept for the next.
    scratch: Vec<u8>,
    /// A search for [`META_KEY`], built once.
    finder: Finder<'static>,
}

/// `_meta` as a quoted member name.
const META_KEY: &[u8] = b"\"_meta\"";

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
                let (scratch, finder) = match self.meta.take() {
                    Some(m) => (m.scratch, m.finder),
                    None => (Vec::new(), Finder::new(META_KEY)),
                };
                self.meta = Some(MetaCache {
                    text: text.into(),
                    entry: Some(entry),
                    scratch,
                    finder,
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
