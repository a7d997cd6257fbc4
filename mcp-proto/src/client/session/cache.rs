//! The list cache (2026-07-28 caching hints, SEP-2549).
//!
//! A listing (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`) whose every page carried `ttlMs` > 0 and a `cacheScope`
//! is kept, whole, until the earliest of its pages goes stale (`arrival + ttlMs`, on the
//! machine's clock). A call for the same method and params within that time completes
//! at once from the cache and sends nothing.
//!
//! * The cache belongs to one client machine, so nothing in it is shared with another
//!   user. Within the machine, `"private"` entries are tied to the authorization
//!   context they were fetched under: when the `Authorization` value changes (another
//!   token), they are dropped and never served; `"public"` entries stay. A listing whose
//!   pages disagree on the scope is treated as private.
//! * A matching `notifications/*/list_changed` drops the entries of that list
//!   (`resources/list_changed` drops the resource templates too), and a listing that
//!   was in flight when one arrived is not stored.
//! * `ttlMs` absent, zero, negative or not an integer, or `cacheScope` absent or
//!   unknown: not cached. Legacy-era listings carry no hints and are never cached.
//! * Bounded by `Limits::max_cache_entries` and `Limits::max_cache_bytes` (the verbatim
//!   bytes of the last page and of the items); the oldest entry goes first, and a
//!   listing larger than the whole budget is not kept.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::value::RawValue;

use super::CallOutput;
use crate::Instant;

/// The methods whose results are cached, as static names.
pub(crate) fn cacheable(method: &str) -> Option<&'static str> {
    [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ]
    .into_iter()
    .find(|m| *m == method)
}

/// The lists a `list_changed` notification invalidates.
pub(crate) fn invalidated_by(notification: &str) -> &'static [&'static str] {
    match notification {
        "notifications/tools/list_changed" => &["tools/list"],
        "notifications/prompts/list_changed" => &["prompts/list"],
        "notifications/resources/list_changed" => &["resources/list", "resources/templates/list"],
        _ => &[],
    }
}

/// The scope a page declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Public,
    Private,
}

/// The caching hints of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hint {
    pub(crate) ttl: Duration,
    pub(crate) scope: Scope,
}

impl Hint {
    /// Reads `ttlMs` and `cacheScope` (raw member values); `None` when the page may not
    /// be cached.
    pub(crate) fn of(ttl: Option<&RawValue>, scope: Option<&RawValue>) -> Option<Hint> {
        let ttl: u64 = serde_json::from_str(ttl?.get()).ok()?;
        let scope = match scope?.get() {
            "\"public\"" => Scope::Public,
            "\"private\"" => Scope::Private,
            _ => return None,
        };
        (ttl > 0).then(|| Hint {
            ttl: Duration::from_millis(ttl),
            scope,
        })
    }
}

/// What a listing in flight learned about caching so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    /// Every page so far had hints: the earliest expiry and the combined scope.
    pub(crate) fresh_until: Option<(Instant, Scope)>,
    /// The cache's generation when the call started.
    pub(crate) generation: u64,
    /// A page without hints was seen: never stored.
    pub(crate) spoiled: bool,
}

impl Pending {
    /// One more page arrived at `now`.
    pub(crate) fn page(&mut self, now: Instant, hint: Option<Hint>) {
        let Some(h) = hint else {
            self.spoiled = true;
            return;
        };
        let until = now + h.ttl;
        self.fresh_until = Some(match self.fresh_until {
            None => (until, h.scope),
            Some((t, s)) => (
                t.min(until),
                if s == Scope::Public && h.scope == Scope::Public {
                    Scope::Public
                } else {
                    Scope::Private
                },
            ),
        });
    }
}

#[derive(Debug)]
struct Entry {
    key: String,
    method: &'static str,
    until: Instant,
    scope: Scope,
    /// The authorization context a private entry was fetched under.
    context: u64,
    output: CallOutput,
    bytes: usize,
}

/// The cache. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct ListCache {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// Bumped by every invalidation: listings started before it are not stored.
    pub(crate) generation: u64,
    /// The authorization context (bumped when the credentials change).
    context: u64,
}

/// The key of a request: its method and params.
pub(crate) fn key(method: &str, params: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut k = String::with_capacity(method.len() + 2);
    k.push_str(method);
    k.push(' ');
    k.push_str(&serde_json::to_string(params).unwrap_or_default());
    k
}

impl ListCache {
    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// A fresh entry for `key`, as a copy of the output it stored.
    pub(crate) fn lookup(&mut self, now: Instant, key: &str) -> Option<CallOutput> {
        self.lookup_ref(now, key).cloned()
    }

    fn lookup_ref(&mut self, now: Instant, key: &str) -> Option<&CallOutput> {
        self.expire(now);
        let context = self.context;
        self.entries
            .iter()
            .find(|e| e.key == key && (e.scope == Scope::Public || e.context == context))
            .map(|e| &e.output)
    }

    /// The items of a fresh entry for `key`.
    pub(crate) fn items(&mut self, now: Instant, key: &str) -> Option<&[Box<RawValue>]> {
        self.lookup_ref(now, key).map(|o| o.items.as_slice())
    }

    /// Stores a completed listing, within `max_entries` and `max_bytes`.
    pub(crate) fn store(
        &mut self,
        method: &'static str,
        key: String,
        pending: Pending,
        output: &CallOutput,
        max_entries: usize,
        max_bytes: usize,
    ) {
        if pending.spoiled || pending.generation != self.generation {
            return;
        }
        let Some((until, scope)) = pending.fresh_until else {
            return;
        };
        self.remove_key(&key);
        let bytes = key.len()
            + output.result.get().len()
            + output.items.iter().map(|i| i.get().len()).sum::<usize>();
        if max_entries == 0 || bytes > max_bytes {
            return;
        }
        while self.entries.len() >= max_entries || self.bytes + bytes > max_bytes {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        self.entries.push_back(Entry {
            key,
            method,
            until,
            scope,
            context: self.context,
            output: output.clone(),
            bytes,
        });
    }

    /// Drops every entry of `method` (a change notification, a header mismatch).
    pub(crate) fn invalidate(&mut self, method: &str) {
        self.generation += 1;
        let before = self.entries.len();
        self.entries.retain(|e| e.method != method);
        if self.entries.len() != before {
            self.recount();
        }
    }

    /// The server was restarted: nothing it listed before is known to hold.
    pub(crate) fn clear(&mut self) {
        self.generation += 1;
        self.entries.clear();
        self.recount();
    }

    /// The authorization changed: private entries are no longer this context's.
    pub(crate) fn change_context(&mut self) {
        self.context += 1;
        self.generation += 1;
        self.entries.retain(|e| e.scope == Scope::Public);
        self.recount();
    }

    fn remove_key(&mut self, key: &str) {
        self.entries.retain(|e| e.key != key);
        self.recount();
    }

    fn expire(&mut self, now: Instant) {
        let before = self.entries.len();
        self.entries.retain(|e| e.until > now);
        if self.entries.len() != before {
            self.recount();
        }
    }

    fn recount(&mut self) {
        self.bytes = self.entries.iter().map(|e| e.bytes).sum();
    }
}

impl super::Session {
    /// Drops the cached listings of `method` (the HTTP link after a header mismatch).
    pub(crate) fn invalidate_cache(&mut self, method: &str) {
        self.cache.invalidate(method);
    }

    /// The items of a fresh cached listing of `method` without params.
    pub(crate) fn cached_items(&mut self, now: Instant, method: &str) -> Option<&[Box<RawValue>]> {
        if self.era() != Some(crate::Era::Modern) {
            return None;
        }
        let key = key(method, &serde_json::Map::new());
        self.cache.items(now, &key)
    }

    /// The authorization credentials changed: private cached listings are dropped.
    pub(crate) fn authorization_changed(&mut self) {
        self.cache.change_context();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn hints_are_read_strictly() {
        let h = |t: &str, s: &str| Hint::of(Some(&*raw(t)), Some(&*raw(s)));
        assert_eq!(
            h("1000", "\"public\""),
            Some(Hint {
                ttl: Duration::from_secs(1),
                scope: Scope::Public
            })
        );
        assert_eq!(h("0", "\"public\""), None);
        assert_eq!(h("-5", "\"private\""), None);
        assert_eq!(h("1.5", "\"private\""), None);
        assert_eq!(h("10", "\"shared\""), None);
        assert_eq!(Hint::of(None, Some(&*raw("\"public\""))), None);
    }
}
