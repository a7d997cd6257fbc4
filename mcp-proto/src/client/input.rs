//! The typed parts of input requests and of logging: roots, sampling requests and
//! results, log levels and messages, and the policy a URL of a URL-mode elicitation
//! must pass before anyone sees it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::http::{EndpointUrl, Scheme};

/// One root the client offers the server (`Root`): a `file://` URI and an optional name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The URI; `file://` in every current version.
    pub uri: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root with this URI and no name.
    #[must_use]
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// The same root with a name.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The answer to `roots/list` (`ListRootsResult`).
#[must_use]
pub fn roots_result(roots: &[Root]) -> Value {
    let list: Vec<Value> = roots
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
        .collect();
    let mut m = Map::new();
    m.insert("roots".into(), Value::Array(list));
    Value::Object(m)
}

/// Who wrote a sampling message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a sampling conversation (`SamplingMessage`); its content (a block,
/// or from 2025-11-25 an array of blocks) is kept as the server sent it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who wrote it.
    pub role: Role,
    /// The content, verbatim.
    pub content: Value,
    /// Other fields (`_meta`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The params of `sampling/createMessage` (`CreateMessageRequestParams`), legacy request
/// or 2026 input request alike. Fields this client does not interpret (`modelPreferences`,
/// `includeContext`, `temperature`, `stopSequences`, `metadata`, `tools`, `toolChoice`,
/// `_meta`, …) are kept in `extra`, verbatim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingRequest {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the model may produce.
    #[serde(rename = "maxTokens")]
    pub max_tokens: u64,
    /// A system prompt the server asks for.
    #[serde(
        rename = "systemPrompt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub system_prompt: Option<String>,
    /// Every other field, verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer to a sampling request (`CreateMessageResult`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingResult {
    /// Normally [`Role::Assistant`].
    pub role: Role,
    /// The content block(s), verbatim.
    pub content: Value,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, …).
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
    /// Other fields (`_meta`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SamplingResult {
    /// A text answer from `model`.
    #[must_use]
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        SamplingResult {
            role: Role::Assistant,
            content: serde_json::json!({"type": "text", "text": text.into()}),
            model: model.into(),
            stop_reason: Some("endTurn".to_owned()),
            extra: Map::new(),
        }
    }
}

/// A log level (the syslog severities of RFC 5424), least severe first, so that
/// `level >= threshold` reads as "at or above".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level as the protocol spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level spelled `s`, if any.
    #[must_use]
    pub fn parse(s: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A log message from the server (`notifications/message`).
#[derive(Clone, Debug, Deserialize)]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// The logger's name, when given.
    #[serde(default)]
    pub logger: Option<String>,
    /// The payload (any JSON), verbatim.
    pub data: Box<RawValue>,
}

/// Why the URL of a URL-mode elicitation is not shown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlRefused {
    /// There is no `url`.
    #[error("no url")]
    Missing,
    /// It is not an `https` URL (or `http` to a loopback host), or it does not parse.
    #[error("not an https URL (or http to loopback): {0}")]
    Invalid(String),
    /// It carries a user name or password (`user@host`), a classic way to disguise
    /// where a link leads.
    #[error("the URL carries credentials (userinfo)")]
    UserInfo,
}

/// The URL policy of URL-mode elicitation: `https`, or plain `http` to a loopback host
/// (`localhost`, 127.0.0.0/8, `::1`), and no userinfo. The URL is only ever shown to a
/// person; the client never fetches it.
///
/// ```
/// use mcp_proto::client::{UrlRefused, check_elicitation_url};
///
/// assert!(check_elicitation_url("https://example.com/form?x=1").is_ok());
/// assert!(check_elicitation_url("http://127.0.0.1:8080/form").is_ok());
/// assert!(matches!(check_elicitation_url("http://example.com/"), Err(UrlRefused::Invalid(_))));
/// assert_eq!(check_elicitation_url("https://me@example.com/"), Err(UrlRefused::UserInfo));
/// assert!(check_elicitation_url("javascript:alert(1)").is_err());
/// ```
///
/// # Errors
/// [`UrlRefused`] naming the problem.
pub fn check_elicitation_url(url: &str) -> Result<(), UrlRefused> {
    match EndpointUrl::parse(url, false) {
        Ok(u) if u.scheme() == Scheme::Https || u.is_loopback() => Ok(()),
        Ok(_) => Err(UrlRefused::Invalid(
            "plain http to a remote host".to_owned(),
        )),
        Err(crate::http::UrlError::UserInfo) => Err(UrlRefused::UserInfo),
        Err(e) => Err(UrlRefused::Invalid(e.to_string())),
    }
}

/// Longest `elicitationId` of a URL-mode elicitation accepted (bytes): room for a UUID or
/// a signed token. The id is kept after the request was answered, until the server's
/// completion notice (which may never come), so a longer one is refused with `-32602`
/// before it is shown.
pub const MAX_ELICITATION_ID_BYTES: usize = 1024;

impl crate::model::ElicitationParams {
    /// The `elicitationId` of a URL-mode elicitation (2025-11-25), when it has one.
    #[must_use]
    pub fn elicitation_id(&self) -> Option<&str> {
        self.extra.get("elicitationId").and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_and_spell() {
        assert!(LogLevel::Error > LogLevel::Warning);
        for l in LogLevel::ALL {
            assert_eq!(LogLevel::parse(l.as_str()), Some(l));
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
        }
        assert_eq!(LogLevel::parse("loud"), None);
    }

    #[test]
    fn sampling_requests_keep_what_they_do_not_interpret() {
        let text = r#"{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],
            "maxTokens":64,"temperature":0.5,"includeContext":"none"}"#;
        let r: SamplingRequest = serde_json::from_str(text).unwrap();
        assert_eq!(r.max_tokens, 64);
        assert_eq!(r.extra["temperature"], 0.5);
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["includeContext"], "none");
        assert!(serde_json::from_str::<SamplingRequest>(r#"{"messages":[]}"#).is_err());
    }
}
