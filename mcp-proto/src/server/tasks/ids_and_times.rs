//! Task ids and the times tasks show. Seeded with real entropy
//! ([`Server::seed_tasks`]), ids are the first 128 bits of an HMAC of the task's `seq`
//! under a key made from the seed, and `createdAt` / `lastUpdatedAt` are UTC times from
//! the epoch handed in; unseeded, ids are sequential and every time reads [`TIMESTAMP`].
//! The machine reads no clock: a time is the epoch plus the machine's `Instant`.

use crate::Instant;
#[cfg(doc)]
use crate::server::Server;

use super::{TIMESTAMP, TaskStore};

impl TaskStore {
    /// Keys the ids with `seed` unless [`TaskStore::seed`] did (times stay as they are).
    pub(in crate::server) fn key_ids(&mut self, seed: &[u8]) {
        if self.key.is_none() {
            self.key = Some(crate::auth::crypto::hmac_sha256(seed, &[b"task id key"]));
        }
    }

    /// Keys task ids with `seed` and dates tasks from `epoch_unix_ms`.
    pub(in crate::server) fn seed(&mut self, seed: &[u8; 32], epoch_unix_ms: u64) {
        self.key = Some(crate::auth::crypto::hmac_sha256(seed, &[b"task id key"]));
        self.epoch_unix_ms = Some(epoch_unix_ms);
    }

    pub(super) fn mint_id(&mut self) -> (u64, String) {
        self.next += 1;
        let seq = self.next;
        let id = match &self.key {
            Some(key) => {
                let mac = crate::auth::crypto::hmac_sha256(key, &[&seq.to_be_bytes()]);
                mac[..16].iter().map(|b| format!("{b:02x}")).collect()
            }
            None => format!("task-{seq}"),
        };
        (seq, id)
    }

    pub(super) fn timestamp(&self, at: Instant) -> String {
        match self.epoch_unix_ms {
            Some(epoch) => {
                let ms = u64::try_from(at.elapsed_since_origin().as_millis()).unwrap_or(u64::MAX);
                crate::time::rfc3339_utc(epoch.saturating_add(ms))
            }
            None => TIMESTAMP.to_owned(),
        }
    }
}
