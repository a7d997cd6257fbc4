//! `mcp serve-example --http ADDR --redis URL --state-key-file FILE`: the state several
//! example server processes behind one URL share. The `requestState` keys come from the
//! key file (each process reads the same file, and reads it again when it changes, so
//! keys rotate without a restart); single-use nonces, legacy sessions and resumable SSE
//! events go to Redis (`mcp-redis`). What stays in each process (parked calls, open
//! streams, tasks) is in the README's "Several server processes".
//!
//! Rotating without downtime takes two edits of the file, each given time to reach every
//! process ([`KEY_FILE_CHECK`]): first add the new key marked `open` (every process then
//! opens what it will seal, and none seals with it yet), then drop the mark (it seals
//! everywhere, and the old key still opens); remove the old key once its states have
//! expired.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_blocking::HttpServerHandle;
use mcp_blocking::mcp_proto::server::http::HttpEndpoint;
use mcp_blocking::mcp_proto::server::{KeyRing, SealedStateCodec, ServerConfig};
use mcp_redis::{Redis, RedisEventLimits, RedisOptions};

/// The largest key file read.
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;
/// The most keys in a key file.
const MAX_KEYS: usize = 16;
/// How often the key file is read again for a change.
pub const KEY_FILE_CHECK: Duration = Duration::from_secs(1);

/// Reads a key file: one key per line, `<key id> <64 hex digits>` (32 bytes), blank
/// lines and `#` comments ignored; the last key seals, every key opens.
pub fn load_key_ring(path: &Path) -> Result<KeyRing, String> {
    let text = read_key_file(path)?;
    parse_key_ring(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The key file's text, bounded.
fn read_key_file(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    if text.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(format!("the key file {} is too large", path.display()));
    }
    Ok(text)
}

/// One key per line, `<key id> <64 hex digits> [open]`: the last line without `open`
/// seals, every line opens.
fn parse_key_ring(text: &str) -> Result<KeyRing, String> {
    let mut ring: Option<KeyRing> = None;
    let mut opening = Vec::new();
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
        let bad = || format!("line {}: expected `<key id> <64 hex digits> [open]`", n + 1);
        let mut fields = line.split_whitespace();
        let (Some(id), Some(hex)) = (fields.next(), fields.next()) else {
            return Err(bad());
        };
        let secret = decode_hex(hex).ok_or_else(bad)?;
        match (fields.next(), fields.next()) {
            (None, _) => {}
            (Some("open"), None) => {
                opening.push((n, id, secret));
                continue;
            }
            _ => return Err(bad()),
        }
        let added = match &mut ring {
            Some(r) => r.rotate(id, secret),
            None => KeyRing::new(id, secret).map(|r| {
                ring = Some(r);
            }),
        };
        added.map_err(|e| format!("line {}: {e}", n + 1))?;
    }
    let mut ring = ring.ok_or_else(|| "no key that seals (every line is `open`)".to_owned())?;
    for (n, id, secret) in opening {
        ring.add_opening(id, secret)
            .map_err(|e| format!("line {}: {e}", n + 1))?;
    }
    Ok(ring)
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
    key_file: std::path::PathBuf,
}

impl Scale {
    /// Connects to Redis and reads the key file.
    pub fn open(url: &str, key_file: &Path) -> Result<Scale, String> {
        let keys = load_key_ring(key_file)?;
        let redis = Redis::connect(url, RedisOptions::default()).map_err(|e| match e {
            // It names the URL, its credentials hidden.
            mcp_redis::RedisError::BadUrl(_) => format!("cannot use Redis: {e}"),
            e => format!("cannot use Redis at {url}: {e}"),
        })?;
        Ok(Scale {
            redis,
            keys,
            key_file: key_file.to_owned(),
        })
    }

    /// Seals `requestState` under the shared keys, with single use recorded in Redis;
    /// `confirm`'s state becomes single-use, so that a replay to any process is refused.
    pub fn configure(&self, config: &mut ServerConfig) -> Result<(), String> {
        config.state_codec = Box::new(self.codec(self.keys.clone())?);
        for tool in &mut config.tools {
            if tool.name == "confirm" {
                tool.single_use_state = true;
            }
        }
        Ok(())
    }

    /// Seals under `keys`, with single use recorded in Redis.
    fn codec(&self, keys: KeyRing) -> Result<SealedStateCodec, String> {
        let seed = mcp_io::auth::random_seed().map_err(|e| e.to_string())?;
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let since_origin = u64::try_from(mcp_io::clock::now().elapsed_since_origin().as_millis())
            .unwrap_or(u64::MAX);
        let epoch = unix_ms - since_origin.min(unix_ms);
        Ok(SealedStateCodec::new(keys, &seed, epoch)
            .consumption_store(Box::new(self.redis.consumption_store())))
    }

    /// Reads the key file every [`KEY_FILE_CHECK`] until the server stops; when its text
    /// changed, the keys it holds now replace the server's (a file that cannot be read
    /// or parsed is reported on stderr, and the keys in force stay).
    pub fn watch_keys(&self, handle: &HttpServerHandle) {
        let key_file = self.key_file.as_path();
        let stop = handle.stop_flag();
        let mut last = read_key_file(key_file).ok();
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(KEY_FILE_CHECK);
            let text = match read_key_file(key_file) {
                Ok(text) if last.as_ref() == Some(&text) => continue,
                Ok(text) => text,
                Err(e) => {
                    if last.take().is_some() {
                        eprintln!("mcp serve-example: {e}; the keys in force stay");
                    }
                    continue;
                }
            };
            let codec = parse_key_ring(&text)
                .map_err(|e| format!("{}: {e}", key_file.display()))
                .and_then(|ring| self.codec(ring));
            match codec {
                Ok(codec) => {
                    let now = mcp_io::clock::now();
                    handle.with_endpoint(|e| {
                        e.update_server(now, |s| s.set_state_codec(Box::new(codec)));
                    });
                    eprintln!(
                        "mcp serve-example: keys read again from {}",
                        key_file.display()
                    );
                }
                Err(e) => eprintln!("mcp serve-example: {e}; the keys in force stay"),
            }
            last = Some(text);
        }
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
        // A key marked `open` opens and never seals, wherever it stands.
        let ring = parse_key_ring(&format!("old {a}\nnext {b} open\n")).unwrap();
        assert_eq!(ring.current_id(), "old");
        assert!(ring.contains("next"));
        let ring = parse_key_ring(&format!("next {b} open\nold {a}\n")).unwrap();
        assert_eq!(ring.current_id(), "old");
        for bad in [
            String::new(),
            "# only a comment".to_owned(),
            format!("k {}", "1".repeat(63)),
            format!("k {}", "zz".repeat(32)),
            "k".to_owned(),
            format!("bad/id {a}"),
            format!("k {a}\n").repeat(17),
            format!("k {a} open"),
            format!("k {a} seal"),
            format!("k {a} open extra"),
        ] {
            assert!(parse_key_ring(&bad).is_err(), "{bad:?}");
        }
    }
}
