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
                iso8601(epoch.saturating_add(ms))
            }
            None => TIMESTAMP.to_owned(),
        }
    }
}

/// `unix_ms` as an RFC 3339 UTC time with milliseconds.
fn iso8601(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn iso8601_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_764_634_225_000), "2025-12-02T00:10:25.000Z");
    }
}
