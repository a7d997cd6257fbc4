//! The little cryptography the authorization flow needs, in pure Rust so the machine
//! builds on every target (`wasm32` included) without a C toolchain: SHA-256 (FIPS 180-4)
//! for PKCE and JWK thumbprints, HMAC-SHA-256 (RFC 2104), a deterministic random bit
//! generator (HMAC_DRBG, NIST SP 800-90A) seeded by the caller, and base64url.
//!
//! Nothing here signs: signatures need a private key and, for ECDSA and RSA blinding,
//! fresh randomness from the operating system, so they go through a
//! [`Signer`](super::Signer) the adapter supplies.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// An incremental SHA-256.
#[derive(Clone)]
pub(crate) struct Sha256 {
    state: [u32; 8],
    block: [u8; 64],
    filled: usize,
    length: u64,
}

impl Sha256 {
    pub(crate) fn new() -> Self {
        Sha256 {
            state: H0,
            block: [0; 64],
            filled: 0,
            length: 0,
        }
    }

    pub(crate) fn update(&mut self, mut data: &[u8]) {
        self.length = self.length.wrapping_add(data.len() as u64);
        while !data.is_empty() {
            let take = (64 - self.filled).min(data.len());
            self.block[self.filled..self.filled + take].copy_from_slice(&data[..take]);
            self.filled += take;
            data = &data[take..];
            if self.filled == 64 {
                let block = self.block;
                self.compress(&block);
                self.filled = 0;
            }
        }
    }

    pub(crate) fn finish(mut self) -> [u8; 32] {
        let bits = self.length.wrapping_mul(8);
        self.update(&[0x80]);
        while self.filled != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_be_bytes());
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    fn compress(&mut self, block: &[u8; 64]) {
        let mut w = [0u32; 64];
        for (i, chunk) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = self.state;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = h
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (s, v) in self.state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            *s = s.wrapping_add(v);
        }
    }
}

/// SHA-256 of `data`.
#[must_use]
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(data);
    h.finish()
}

/// HMAC-SHA-256 of the concatenation of `parts` under `key`.
#[must_use]
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&sha256(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(&block.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let inner = inner.finish();
    let mut outer = Sha256::new();
    outer.update(&block.map(|b| b ^ 0x5c));
    outer.update(&inner);
    outer.finish()
}

/// Compares two byte strings in time that depends only on their lengths.
#[must_use]
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// base64url without padding (RFC 4648 §5), as OAuth and JOSE use it.
#[must_use]
pub fn base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A deterministic random bit generator: HMAC_DRBG with SHA-256 (NIST SP 800-90A §10.1.2),
/// seeded by the caller with at least 32 bytes from a real entropy source. The machine
/// never reads the operating system's generator; the adapter does, once, and hands the
/// seed over. With a fixed seed (tests) everything the flow draws is reproducible.
pub struct Drbg {
    key: [u8; 32],
    value: [u8; 32],
}

impl std::fmt::Debug for Drbg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Drbg(<secret>)")
    }
}

impl Drbg {
    /// A generator seeded with `seed` (the entropy input and nonce of SP 800-90A, as one
    /// string).
    #[must_use]
    pub fn new(seed: &[u8]) -> Self {
        let mut d = Drbg {
            key: [0; 32],
            value: [1; 32],
        };
        d.update(seed);
        d
    }

    /// Mixes more entropy in (a reseed).
    pub fn reseed(&mut self, entropy: &[u8]) {
        self.update(entropy);
    }

    fn update(&mut self, provided: &[u8]) {
        self.key = hmac_sha256(&self.key, &[&self.value, &[0], provided]);
        self.value = hmac_sha256(&self.key, &[&self.value]);
        if !provided.is_empty() {
            self.key = hmac_sha256(&self.key, &[&self.value, &[1], provided]);
            self.value = hmac_sha256(&self.key, &[&self.value]);
        }
    }

    /// Fills `out` with generated bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(32) {
            self.value = hmac_sha256(&self.key, &[&self.value]);
            chunk.copy_from_slice(&self.value[..chunk.len()]);
        }
        self.update(&[]);
    }

    /// `n` generated bytes, base64url-encoded.
    #[must_use]
    pub fn token(&mut self, n: usize) -> String {
        let mut bytes = vec![0u8; n];
        self.fill(&mut bytes);
        base64url(&bytes)
    }
}

/// A PKCE pair (RFC 7636) with method `S256`: the verifier is base64url of 32 random
/// bytes (43 characters), the challenge base64url of its SHA-256.
#[derive(Clone)]
pub struct Pkce {
    /// Sent with the token request; secret until then.
    pub verifier: String,
    /// Sent with the authorization request.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &crate::http::secret::REDACTED)
            .field("challenge", &self.challenge)
            .finish()
    }
}

impl Pkce {
    /// A pair from a verifier.
    #[must_use]
    pub fn from_verifier(verifier: String) -> Self {
        let challenge = base64url(&sha256(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }

    /// A fresh pair drawn from `rng`.
    #[must_use]
    pub fn generate(rng: &mut Drbg) -> Self {
        Pkce::from_verifier(rng.token(32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha256_matches_the_fips_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&sha256(&million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
        // Incremental updates across block boundaries give the same digest.
        let mut h = Sha256::new();
        for chunk in million.chunks(63) {
            h.update(chunk);
        }
        assert_eq!(h.finish(), sha256(&million));
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 1.
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], &[b"Hi There"])),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2: a short key, the message in two parts.
        assert_eq!(
            hex(&hmac_sha256(
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn pkce_matches_rfc_7636_appendix_b() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(!format!("{p:?}").contains("dBjft"));
    }

    #[test]
    fn drbg_is_deterministic_per_seed_and_never_repeats() {
        let mut a = Drbg::new(&[7; 32]);
        let mut b = Drbg::new(&[7; 32]);
        let mut c = Drbg::new(&[8; 32]);
        let (x, y, z) = (a.token(32), b.token(32), c.token(32));
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_eq!(x.len(), 43);
        let next = a.token(32);
        assert_ne!(next, x);
        let verifier = Pkce::generate(&mut a).verifier;
        assert_eq!(verifier.len(), 43);
        assert!(
            verifier
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
