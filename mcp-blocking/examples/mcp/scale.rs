//! `mcp serve-example --http ADDR --redis URL --state-key-file FILE`: the state several
//! example server processes behind one URL share. The `requestState` keys come from the
//! key file (each process reads the same file); single-use nonces, legacy sessions and
//! resumable SSE events go to Redis (`mcp-redis`). What stays in each process (parked
//! calls, open streams, tasks) is in the README's "Several server processes".

use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_blocking::mcp_proto::server::http::HttpEndpoint;
use mcp_blocking::mcp_proto::server::{KeyRing, SealedStateCodec, ServerConfig};
use mcp_redis::{Redis, RedisEventLimits, RedisOptions};

/// The largest key file read.
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;
/// The most keys in a key file.
const MAX_KEYS: usize = 16;

/// Reads a key file: one key per line, `<key id> <64 hex digits>` (32 bytes), blank
/// lines and `#` comments ignored; the last key seals, every key opens.
pub fn load_key_ring(path: &Path) -> Result<KeyRing, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    if text.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(format!("the key file {} is too large", path.display()));
    }
    parse_key_ring(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse_key_ring(text: &str) -> Result<KeyRing, String> {
    let mut ring: Option<KeyRing> = None;
    let mut count = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        count += 1;
        if count > MAX_KEYS {
            return Err(format!("more than {MAX_KEYS} keys"));
        }
        let bad = || format!("line {}: expected `<key id> <64 hex digits>`", n + 1);
        let (id, hex) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
        let secret = decode_hex(hex.trim()).ok_or_else(bad)?;
        let added = match &mut ring {
            Some(r) => r.rotate(id, secret),
            None => KeyRing::new(id, secret).map(|r| {
                ring = Some(r);
            }),
        };
        added.map_err(|e| format!("line {}: {e}", n + 1))?;
    }
    ring.ok_or_else(|| "no key".to_owned())
}

fn decode_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

/// The shared state of a scaled-out example server.
pub struct Scale {
    redis: Redis,
    keys: KeyRing,
}

impl Scale {
    /// Connects to Redis and reads the key file.
    pub fn open(url: &str, key_file: &Path) -> Result<Scale, String> {
        let keys = load_key_ring(key_file)?;
        let redis = Redis::connect(url, RedisOptions::default())
            .map_err(|e| format!("cannot use Redis at {url}: {e}"))?;
        Ok(Scale { redis, keys })
    }

    /// Seals `requestState` under the shared keys, with single use recorded in Redis;
    /// `confirm`'s state becomes single-use, so that a replay to any process is refused.
    pub fn configure(&self, config: &mut ServerConfig) -> Result<(), String> {
        let seed = mcp_io::auth::random_seed().map_err(|e| e.to_string())?;
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let since_origin = u64::try_from(mcp_io::clock::now().elapsed_since_origin().as_millis())
            .unwrap_or(u64::MAX);
        let codec = SealedStateCodec::new(
            self.keys.clone(),
            &seed,
            unix_ms - since_origin.min(unix_ms),
        )
        .consumption_store(Box::new(self.redis.consumption_store()));
        config.state_codec = Box::new(codec);
        for tool in &mut config.tools {
            if tool.name == "confirm" {
                tool.single_use_state = true;
            }
        }
        Ok(())
    }

    /// Puts the shared session and event stores in place.
    pub fn setup(&self, endpoint: &mut HttpEndpoint) {
        let idle = endpoint.config().session_idle_timeout;
        endpoint.set_session_store(Box::new(self.redis.session_store(idle)));
        let mut limits = RedisEventLimits::default();
        limits.ttl = idle.max(Duration::from_secs(60));
        endpoint.set_event_store(Box::new(self.redis.event_store(limits)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_name_keys_and_the_last_seals() {
        let a = "11".repeat(32);
        let b = "ab".repeat(32);
        let ring = parse_key_ring(&format!("# keys\n\nold {a}\nnew   {b}\n")).unwrap();
        assert_eq!(ring.current_id(), "new");
        assert!(ring.contains("old"));
        for bad in [
            String::new(),
            "# only a comment".to_owned(),
            format!("k {}", "1".repeat(63)),
            format!("k {}", "zz".repeat(32)),
            "k".to_owned(),
            format!("bad/id {a}"),
            format!("k {a}\n").repeat(17),
        ] {
            assert!(parse_key_ring(&bad).is_err(), "{bad:?}");
        }
    }
}
