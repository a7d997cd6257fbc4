//! What authorization needs from the world, for both adapters: entropy and the wall
//! clock for the flow ([`prepare_auth`]), signing keys ([`KeySigner`]), and the hook that
//! gets a person's approval ([`AuthorizationHandler`]). The flow itself, every decision
//! in it, is [`mcp_proto::auth`]'s.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mcp_proto::Instant;

use crate::wire_log::REDACTED;
use mcp_proto::auth::crypto::sha256;
use mcp_proto::auth::{AuthConfig, AuthError, Signer};
use mcp_proto::client::{ApiMisuse, Client, InputAnswer, InputId};
use mcp_proto::jsonrpc::{ErrorObject, codes};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};

/// Gets a person's approval of an authorization: given the URL to open (in a browser,
/// or shown to the person), returns the URL the browser was sent back to (the redirect
/// URI with `code` and `state`), or why there is none.
///
/// It runs on the thread (or task) that drives the connection, so everything else on
/// the connection waits for it; the machine's own approval timeout still applies.
pub trait AuthorizationHandler {
    /// The callback URL for the authorization at `url`.
    ///
    /// # Errors
    ///
    /// Why no approval came (the person declined, the listener timed out, …): the
    /// requests that waited fail with it.
    fn authorize(&mut self, url: &str) -> Result<String, String>;
}

impl<F: FnMut(&str) -> Result<String, String>> AuthorizationHandler for F {
    fn authorize(&mut self, url: &str) -> Result<String, String> {
        self(url)
    }
}

/// What [`Options::handle_event`](crate::Options::handle_event) hands back for the
/// machine: apply it with [`Reply::apply`]. Its `Debug` hides the callback URL's query
/// values (the authorization code, `state`).
#[non_exhaustive]
pub enum Reply {
    /// The answer to an input request.
    Input(InputId, InputAnswer),
    /// The browser came back: the callback URL.
    AuthorizationCallback(String),
    /// No approval will come, for this reason.
    AuthorizationAbandoned(String),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Input(input, answer) => {
                f.debug_tuple("Input").field(input).field(answer).finish()
            }
            Reply::AuthorizationCallback(url) => f
                .debug_tuple("AuthorizationCallback")
                .field(&CallbackShown(url))
                .finish(),
            Reply::AuthorizationAbandoned(why) => {
                f.debug_tuple("AuthorizationAbandoned").field(why).finish()
            }
        }
    }
}

/// A callback URL for `Debug`: up to its query, then each parameter's name with its
/// value hidden (a fragment, where some servers put the answer, is hidden whole).
struct CallbackShown<'a>(&'a str);

impl std::fmt::Debug for CallbackShown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (before, fragment) = match self.0.split_once('#') {
            Some((before, _)) => (before, true),
            None => (self.0, false),
        };
        let (base, query) = match before.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (before, None),
        };
        write!(f, "\"{base}")?;
        if let Some(query) = query {
            mcp_proto::http::secret::write_hidden_query(f, query, REDACTED)?;
        }
        if fragment {
            write!(f, "#{REDACTED}")?;
        }
        f.write_str("\"")
    }
}

impl Reply {
    /// Hands the reply to the machine. A refusal needs no handling: an input voided
    /// meanwhile, or a callback the flow rejected, is the machine's to report; a
    /// callback it would wait past (another `state`, a malformed URL) abandons the
    /// authorization, since the handler brings no other.
    pub fn apply(self, machine: &mut Client, now: Instant) {
        match self {
            Reply::Input(input, answer) => {
                if let Err(ApiMisuse::InvalidAnswer(why)) = machine.respond(now, input, answer) {
                    // The handler's answer does not fit the request (a form answer that
                    // fails its schema, say): the server is refused rather than sent it,
                    // so nothing waits forever.
                    let refusal = ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!("the client could not answer: {why}"),
                    );
                    let _ = machine.respond(now, input, InputAnswer::Error(refusal));
                }
            }
            Reply::AuthorizationCallback(url) => {
                // The handler answers once: a callback the flow refuses but would wait
                // past (another `state`, a malformed URL) ends the wait, as nobody is
                // left to bring another; the other refusals already ended the flow.
                if let Err(e @ (AuthError::StateMismatch | AuthError::InvalidCallback { .. })) =
                    machine.handle_authorization_callback(now, &url)
                {
                    machine.abandon_authorization(
                        now,
                        &format!("the authorization handler's callback was refused: {e}"),
                    );
                }
            }
            Reply::AuthorizationAbandoned(reason) => machine.abandon_authorization(now, &reason),
        }
    }
}

/// The configuration as the machine gets it: 32 bytes from the operating system's
/// generator mixed into the seed (a caller's fixed seed cannot make two runs draw the
/// same verifiers), and the Unix time now.
///
/// # Errors
///
/// When the operating system has no random numbers to give.
pub fn prepare_auth(mut config: AuthConfig) -> Result<(AuthConfig, u64), String> {
    let mut fresh = [0u8; 32];
    SystemRandom::new()
        .fill(&mut fresh)
        .map_err(|_| "the operating system's random number generator failed".to_owned())?;
    let mut both = config.seed.to_vec();
    both.extend_from_slice(&fresh);
    config.seed = sha256(&both);
    Ok((config, unix_now()))
}

/// Seals the `requestState` of `server` under a fresh random key unless its codec
/// already protects it ([`Server::seal_request_states`](mcp_proto::server::Server::seal_request_states)),
/// and makes its task ids unguessable and task times real
/// ([`Server::seed_tasks`](mcp_proto::server::Server::seed_tasks)): what the adapters'
/// serve functions do before serving.
///
/// # Errors
/// When the operating system has no random numbers to give.
pub fn seal_server_states(server: &mut mcp_proto::server::Server) -> std::io::Result<()> {
    let seed = random_seed()?;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let since_origin =
        u64::try_from(crate::clock::now().elapsed_since_origin().as_millis()).unwrap_or(u64::MAX);
    let epoch = now_ms.saturating_sub(since_origin);
    server.seal_request_states(seed, epoch);
    // Task ids from a key of their own (the seed is never used twice for one purpose).
    server.seed_tasks(sha256(&[&seed[..], b"tasks"].concat()), epoch);
    Ok(())
}

/// 32 bytes from the operating system's random number generator: the seed the machines
/// take for what must not be guessed (session ids, keys).
///
/// # Errors
/// When the operating system has no random numbers to give.
pub fn random_seed() -> std::io::Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    SystemRandom::new().fill(&mut seed).map_err(|_| {
        std::io::Error::other("the operating system's random number generator failed")
    })?;
    Ok(seed)
}

/// Seconds since the Unix epoch.
#[must_use]
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

enum Key {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A [`Signer`] on a private key in PKCS#8 PEM: ES256 (P-256) or RS256, with `ring`.
pub struct KeySigner {
    key: Key,
    rng: SystemRandom,
}

impl std::fmt::Debug for KeySigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeySigner({})", self.algorithm())
    }
}

impl KeySigner {
    /// Reads a `-----BEGIN PRIVATE KEY-----` (PKCS#8) PEM. `algorithm` is `ES256` or
    /// `RS256`; `None` tries both.
    ///
    /// # Errors
    ///
    /// When the PEM or the key cannot be read, or the algorithm is not one of those.
    pub fn from_pem(pem: &str, algorithm: Option<&str>) -> Result<Arc<KeySigner>, String> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("-----") && !l.is_empty())
            .collect();
        let der = STANDARD
            .decode(body.as_bytes())
            .map_err(|e| format!("the key's PEM is not base64: {e}"))?;
        let rng = SystemRandom::new();
        let ec = || {
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .map(Key::Ec)
                .map_err(|e| format!("not a P-256 PKCS#8 key: {e}"))
        };
        let rsa = || {
            RsaKeyPair::from_pkcs8(&der)
                .map(Key::Rsa)
                .map_err(|e| format!("not an RSA PKCS#8 key: {e}"))
        };
        let key = match algorithm {
            Some("ES256") => ec()?,
            Some("RS256") => rsa()?,
            Some(other) => return Err(format!("unsupported signing algorithm {other:?}")),
            None => ec().or_else(|_| rsa())?,
        };
        Ok(Arc::new(KeySigner { key, rng }))
    }
}

impl KeySigner {
    /// A new P-256 key (ES256) from the operating system's generator: the usual key
    /// for DPoP proofs, made once per connection and never stored.
    ///
    /// # Errors
    ///
    /// When the generator fails.
    pub fn generate_es256() -> Result<Arc<KeySigner>, String> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng)
            .map_err(|_| "generating a P-256 key failed".to_owned())?;
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng)
            .map_err(|e| format!("reading the new key failed: {e}"))?;
        Ok(Arc::new(KeySigner {
            key: Key::Ec(key),
            rng,
        }))
    }
}

impl Signer for KeySigner {
    fn algorithm(&self) -> &str {
        match self.key {
            Key::Ec(_) => "ES256",
            Key::Rsa(_) => "RS256",
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        match &self.key {
            Key::Ec(k) => k
                .sign(&self.rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "ECDSA signing failed".to_owned()),
            Key::Rsa(k) => {
                let mut out = vec![0u8; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &self.rng, message, &mut out)
                    .map_err(|_| "RSA signing failed".to_owned())?;
                Ok(out)
            }
        }
    }

    fn public_jwk(&self) -> serde_json::Value {
        let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
        match &self.key {
            Key::Ec(k) => {
                // Uncompressed point: 0x04, x, y.
                let p = k.public_key().as_ref();
                serde_json::json!({"kty": "EC", "crv": "P-256", "x": b64(&p[1..33]), "y": b64(&p[33..65])})
            }
            Key::Rsa(k) => {
                let parts: ring::rsa::PublicKeyComponents<Vec<u8>> = k.public().into();
                serde_json::json!({"kty": "RSA", "n": b64(&parts.n), "e": b64(&parts.e)})
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Reply;

    #[test]
    fn a_callback_reply_shows_no_code_or_state() {
        let reply = Reply::AuthorizationCallback(
            "http://127.0.0.1:5/callback?code=codesecret&state=statesecret&iss=x&baresecret"
                .to_owned(),
        );
        let shown = format!("{reply:?}");
        for secret in ["codesecret", "statesecret", "baresecret"] {
            assert!(!shown.contains(secret), "{secret} shown: {shown}");
        }
        assert!(shown.contains("127.0.0.1:5/callback?code="), "{shown}");
        let implicit = Reply::AuthorizationCallback(
            "http://127.0.0.1:5/callback#access_token=fragmentsecret".to_owned(),
        );
        let shown = format!("{implicit:?}");
        assert!(!shown.contains("fragmentsecret"), "{shown}");
    }
}
