//! Hash maps keyed by the ids a client hands out itself.
//!
//! [`CallId`](super::CallId), [`ConnId`](super::ConnId), [`InputId`](super::InputId) and
//! the JSON-RPC ids the client writes are counters it chooses, so hashing them with
//! SipHash (the standard library's default, built to resist keys chosen by an attacker)
//! buys nothing and costs about a hundred instructions per lookup, several times per
//! call. [`IdHasher`] multiplies instead.
//!
//! Only for maps whose keys this process inserts: a peer may still choose the key of a
//! *lookup* (the id of a response), which finds nothing or the one entry it names, but a
//! map into which a peer's own keys are inserted is a `BTreeMap` (the default hasher
//! resists such keys, but draws its own from the OS, which this crate never reads).

use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by ids this process assigns, hashed with [`IdHasher`] (read its limits).
#[allow(clippy::disallowed_types)] // a fixed hasher: no keys drawn from the OS
pub type IdMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A set of ids this process assigns, hashed with [`IdHasher`] (read its limits).
#[allow(clippy::disallowed_types)] // a fixed hasher: no keys drawn from the OS
pub type IdSet<K> = std::collections::HashSet<K, BuildHasherDefault<IdHasher>>;

/// A multiplicative hasher for integer ids: one rotation, one xor and one multiplication
/// per integer written.
///
/// Consecutive ids land in distinct buckets of any table up to 2⁶⁴ entries (multiplying
/// by an odd constant permutes the low bits), and the high bits that hashbrown keeps as
/// a tag differ from one id to the next.
///
/// Not resistant to chosen keys: only for maps whose keys this process inserts (call,
/// connection and input ids, the JSON-RPC ids it writes). A peer may still choose the key
/// of a lookup, such as the id of a response, which finds nothing or the one entry it
/// names; a map into which a peer's own keys are inserted must keep the default hasher.
///
/// ```
/// use mcp_proto::client::IdMap;
///
/// let mut calls: IdMap<u64, &str> = IdMap::default();
/// calls.insert(7, "tools/call");
/// assert_eq!(calls.get(&7), Some(&"tools/call"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

/// 2⁶⁴ divided by the golden ratio, made odd: the usual Fibonacci hashing constant.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl IdHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(GOLDEN);
    }
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    /// Bytes, for keys that are not integers: eight at a time.
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.mix(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

    fn write_i64(&mut self, n: i64) {
        self.mix(n.cast_unsigned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash_of(n: u64) -> u64 {
        BuildHasherDefault::<IdHasher>::default().hash_one(n)
    }

    #[test]
    fn consecutive_ids_take_distinct_buckets_and_varied_tags() {
        // hashbrown indexes buckets with the low bits and tags entries with the top 7.
        const N: u64 = 1 << 12;
        let mut buckets = vec![false; N as usize];
        let mut tags = [0u32; 128];
        for id in 0..N {
            let hash = hash_of(id);
            let bucket = (hash & (N - 1)) as usize;
            assert!(
                !buckets[bucket],
                "ids {id} and an earlier one share bucket {bucket}"
            );
            buckets[bucket] = true;
            tags[(hash >> 57) as usize] += 1;
        }
        // 4,096 ids over 128 tags: 32 each on average; none may be crowded.
        let crowded = tags.iter().max().copied().unwrap_or(0);
        assert!(crowded <= 64, "one tag holds {crowded} of {N} ids");
    }

    #[test]
    fn negative_and_byte_keys_hash_and_differ() {
        let build = BuildHasherDefault::<IdHasher>::default();
        assert_ne!(build.hash_one(-1i64), build.hash_one(1i64));
        assert_ne!(build.hash_one("a"), build.hash_one("a\0"));
        let mut set: IdSet<i64> = IdSet::default();
        for n in -500..500 {
            assert!(set.insert(n));
        }
        assert!(set.contains(&-500) && set.contains(&499) && !set.contains(&500));
    }
}
