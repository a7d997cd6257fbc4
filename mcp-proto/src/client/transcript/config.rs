//! The header's account of a machine's configuration, and the configuration rebuilt
//! from it. Limits are written only where they differ from the defaults; every field is
//! named once below, and a field added to one of these structs fails to compile here
//! until it is named.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::entry::{AnswerRepr, RequestRepr};
use crate::client::http::HttpConfig;
use crate::client::http::pool::PoolConfig;
use crate::client::{CallRequest, ClientConfig, InputAnswer};
use crate::http::{EndpointUrl, HttpLimits};
use crate::limits::Limits;
use crate::model::{ClientCapabilities, Implementation};
use crate::sse::SseLimits;
use crate::version::{Era, EraMode, ProtocolVersion, VersionPolicy};

type Fields = Map<String, Value>;

/// Field by field difference from a default, and back.
trait Diff: Sized {
    /// The fields of `self` that differ from `default`.
    fn diff(&self, default: &Self) -> Fields;
    /// `self` with the fields in `fields` set.
    fn patch(&mut self, fields: &Fields) -> Result<(), String>;
}

macro_rules! diff {
    ($ty:ident { $($field:ident),+ $(,)? } $(without { $($skip:ident),+ })?) => {
        impl Diff for $ty {
            fn diff(&self, default: &Self) -> Fields {
                // Every field, so that a new one is not forgotten.
                let $ty { $($field: _,)+ $($($skip: _,)+)? } = self;
                let mut fields = Fields::new();
                $(
                    if self.$field != default.$field {
                        let value = serde_json::to_value(&self.$field).unwrap_or(Value::Null);
                        fields.insert(stringify!($field).to_owned(), value);
                    }
                )+
                fields
            }

            fn patch(&mut self, fields: &Fields) -> Result<(), String> {
                for (name, value) in fields {
                    match name.as_str() {
                        $(
                            stringify!($field) => {
                                self.$field = serde_json::from_value(value.clone())
                                    .map_err(|e| format!("{name}: {e}"))?;
                            }
                        )+
                        other => return Err(format!("unknown field {other:?}")),
                    }
                }
                Ok(())
            }
        }
    };
}

diff!(Limits {
    max_message_bytes,
    max_nesting_depth,
    max_parsed_bytes,
    max_calls_in_flight,
    max_list_pages,
    max_list_items,
    max_list_bytes,
    max_cache_entries,
    max_cache_bytes,
    max_input_rounds,
    max_inputs_per_round,
    max_input_bytes_per_call,
    max_pending_server_requests,
    max_pending_input_bytes,
    max_queued_notifications,
    max_queued_event_bytes,
    max_queued_output_bytes,
    max_task_id_bytes,
    max_task_polls,
    request_timeout,
    probe_timeout,
    initialize_timeout,
    connect_timeout,
});

diff!(HttpLimits {
    max_head_bytes,
    max_headers,
    max_body_bytes,
    max_chunk_size_line,
    max_trailer_bytes,
    max_leftover_bytes,
});

diff!(SseLimits {
    max_line_bytes,
    max_event_bytes,
    max_event_id_bytes,
});

diff!(PoolConfig {
    max_connections,
    idle_timeout,
    connect_timeout,
    fresh_for,
});

diff!(HttpConfig {
    max_error_body,
    max_resume_attempts,
    resume_backoff,
    max_resume_delay,
    max_busy_retries,
    max_retry_after,
    open_get_stream,
    authorization,
    user_agent,
    headers,
    close_timeout,
    unix_time,
} without { url, limits, sse_limits, pool, auth });

/// A [`ClientConfig`].
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct ClientRepr {
    client_info: Implementation,
    era_mode: String,
    versions: Vec<String>,
    #[serde(default, skip_serializing_if = "Fields::is_empty")]
    capabilities: Fields,
    #[serde(default, skip_serializing_if = "Fields::is_empty")]
    limits: Fields,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roots: Option<Vec<crate::client::Root>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    known_era: Option<(Era, String)>,
    /// `ClientConfig::restart`, when restarts are allowed: attempts, first and longest
    /// wait in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restart: Option<(u32, u64, u64)>,
}

/// The capabilities, as flags and extensions.
#[derive(Serialize, Deserialize, Default, PartialEq)]
#[serde(default)]
struct CapsRepr {
    elicitation_form: bool,
    elicitation_url: bool,
    sampling: bool,
    sampling_tools: bool,
    sampling_context: bool,
    roots: bool,
    roots_list_changed: bool,
    extensions: Fields,
}

impl ClientRepr {
    pub(crate) fn of(config: &ClientConfig) -> ClientRepr {
        let ClientCapabilities {
            elicitation_form,
            elicitation_url,
            sampling,
            sampling_tools,
            sampling_context,
            roots,
            roots_list_changed,
            extensions,
        } = config.capabilities.clone();
        let caps = CapsRepr {
            elicitation_form,
            elicitation_url,
            sampling,
            sampling_tools,
            sampling_context,
            roots,
            roots_list_changed,
            extensions,
        };
        let capabilities = match serde_json::to_value(&caps) {
            Ok(Value::Object(m)) => m.into_iter().filter(|(_, v)| !is_empty(v)).collect(),
            _ => Fields::new(),
        };
        ClientRepr {
            client_info: config.client_info.clone(),
            era_mode: era_mode_name(config.era_mode).to_owned(),
            versions: config
                .versions
                .accepted
                .iter()
                .map(|v| v.as_str().to_owned())
                .collect(),
            capabilities,
            limits: config.limits.diff(&Limits::default()),
            roots: config.roots.clone(),
            known_era: config.known_era.map(|(e, v)| (e, v.as_str().to_owned())),
            restart: (config.restart.max_attempts > 0).then(|| {
                let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                let r = &config.restart;
                (r.max_attempts, ms(r.first_delay), ms(r.max_delay))
            }),
        }
    }

    pub(crate) fn config(&self) -> Result<ClientConfig, String> {
        let mut config = ClientConfig::new("", "");
        config.client_info = self.client_info.clone();
        config.era_mode = EraMode::parse(&self.era_mode)
            .ok_or_else(|| format!("unknown era mode {:?}", self.era_mode))?;
        config.versions = VersionPolicy {
            accepted: self
                .versions
                .iter()
                .map(|v| version(v))
                .collect::<Result<_, _>>()?,
        };
        let caps: CapsRepr = serde_json::from_value(Value::Object(self.capabilities.clone()))
            .map_err(|e| format!("capabilities: {e}"))?;
        config.capabilities = ClientCapabilities {
            elicitation_form: caps.elicitation_form,
            elicitation_url: caps.elicitation_url,
            sampling: caps.sampling,
            sampling_tools: caps.sampling_tools,
            sampling_context: caps.sampling_context,
            roots: caps.roots,
            roots_list_changed: caps.roots_list_changed,
            extensions: caps.extensions,
        };
        config.roots = self.roots.clone();
        config.limits.patch(&self.limits)?;
        config.known_era = match &self.known_era {
            Some((era, v)) => Some((*era, version(v)?)),
            None => None,
        };
        if let Some((attempts, first, max)) = self.restart {
            let ms = std::time::Duration::from_millis;
            config.restart =
                crate::client::RestartPolicy::up_to(attempts).delays(ms(first), ms(max));
        }
        Ok(config)
    }
}

fn is_empty(v: &Value) -> bool {
    matches!(v, Value::Bool(false)) || v.as_object().is_some_and(Map::is_empty)
}

fn version(v: &str) -> Result<ProtocolVersion, String> {
    ProtocolVersion::parse(v).ok_or_else(|| format!("unknown protocol version {v:?}"))
}

fn era_mode_name(mode: EraMode) -> &'static str {
    match mode {
        EraMode::Legacy => "legacy",
        EraMode::Auto => "auto",
        EraMode::Modern => "modern",
    }
}

/// An [`HttpConfig`].
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct HttpRepr {
    pub(crate) url: String,
    #[serde(flatten)]
    fields: Fields,
    #[serde(default, skip_serializing_if = "Fields::is_empty")]
    limits: Fields,
    #[serde(default, skip_serializing_if = "Fields::is_empty")]
    sse_limits: Fields,
    #[serde(default, skip_serializing_if = "Fields::is_empty")]
    pool: Fields,
}

impl HttpRepr {
    pub(crate) fn of(http: &HttpConfig) -> HttpRepr {
        let default = HttpConfig::new(http.url.clone());
        HttpRepr {
            url: http.url.as_str().to_owned(),
            fields: http.diff(&default),
            limits: http.limits.diff(&default.limits),
            sse_limits: http.sse_limits.diff(&default.sse_limits),
            pool: http.pool.diff(&default.pool),
        }
    }

    pub(crate) fn config(&self) -> Result<HttpConfig, String> {
        // The URL was accepted once; whether plain http to a remote host was allowed then
        // is not the transcript's business.
        let url = EndpointUrl::parse(&self.url, true).map_err(|e| format!("url: {e}"))?;
        let mut http = HttpConfig::new(url);
        http.patch(&self.fields)?;
        http.limits.patch(&self.limits)?;
        http.sse_limits.patch(&self.sse_limits)?;
        http.pool.patch(&self.pool)?;
        Ok(http)
    }

    /// The `Authorization` value, which a redaction replaces.
    pub(crate) fn authorization_mut(&mut self) -> Option<&mut Value> {
        self.fields.get_mut("authorization")
    }

    /// The [`HttpConfig::headers`] (`[name, value]` pairs), whose values a redaction
    /// may replace.
    pub(crate) fn headers_mut(&mut self) -> impl Iterator<Item = (&str, &mut String)> {
        let pairs = self.fields.get_mut("headers").and_then(Value::as_array_mut);
        pairs.into_iter().flatten().filter_map(|pair| {
            let [Value::String(name), Value::String(value)] = pair.as_array_mut()?.as_mut_slice()
            else {
                return None;
            };
            Some((name.as_str(), value))
        })
    }
}

impl RequestRepr {
    pub(crate) fn of(request: &CallRequest) -> RequestRepr {
        RequestRepr {
            method: request.method.clone(),
            params: request.params.clone(),
            timeout: request.timeout,
            progress: request.progress,
            list_key: request.list_key.map(str::to_owned),
            log_level: request.log_level,
            task: request
                .task
                .map(|a| super::entry::TaskAskRepr { ttl: a.ttl }),
        }
    }

    pub(crate) fn request(&self) -> Result<CallRequest, String> {
        let mut request = CallRequest::new(self.method.clone(), Value::Object(self.params.clone()));
        request.timeout = self.timeout;
        request.progress = self.progress;
        request.log_level = self.log_level;
        request.task = self
            .task
            .as_ref()
            .map(|a| crate::client::session::request::TaskAsk { ttl: a.ttl });
        request.list_key = match self.list_key.as_deref() {
            None => None,
            Some(key) => Some(
                [
                    "tools",
                    "resources",
                    "resourceTemplates",
                    "prompts",
                    "tasks",
                ]
                .into_iter()
                .find(|k| *k == key)
                .ok_or_else(|| format!("unknown listing key {key:?}"))?,
            ),
        };
        Ok(request)
    }
}

impl AnswerRepr {
    pub(crate) fn of(answer: &InputAnswer) -> AnswerRepr {
        match answer {
            InputAnswer::Result(v) => AnswerRepr::Result(v.clone()),
            InputAnswer::Error(e) => AnswerRepr::Error(e.clone()),
        }
    }

    pub(crate) fn answer(&self) -> InputAnswer {
        match self {
            AnswerRepr::Result(v) => InputAnswer::Result(v.clone()),
            AnswerRepr::Error(e) => InputAnswer::Error(e.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_config_survives_the_header() {
        let limits = Limits {
            request_timeout: Duration::from_millis(1500),
            max_input_rounds: 3,
            ..Limits::default()
        };
        let config = ClientConfig::new("t", "1")
            .era_mode(EraMode::Legacy)
            .capabilities(ClientCapabilities::with_elicitation())
            .limits(limits.clone())
            .accept_pre_2025_06_versions()
            .known_era(Some((Era::Legacy, ProtocolVersion::V2025_06_18)));
        let repr = ClientRepr::of(&config);
        let text = serde_json::to_string(&repr).unwrap();
        assert!(
            text.contains(
                r#""limits":{"max_input_rounds":3,"request_timeout":{"nanos":500000000,"secs":1}}"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#""capabilities":{"elicitation_form":true}"#),
            "{text}"
        );
        let back = serde_json::from_str::<ClientRepr>(&text)
            .unwrap()
            .config()
            .unwrap();
        assert_eq!(back.limits, limits);
        assert_eq!(back.era_mode, EraMode::Legacy);
        assert_eq!(back.versions, config.versions);
        assert_eq!(back.capabilities, config.capabilities);
        assert_eq!(back.client_info, config.client_info);
        assert_eq!(back.known_era, config.known_era);
    }

    #[test]
    fn an_http_config_survives_the_header() {
        let url = EndpointUrl::parse("https://example.com/mcp?x=1", false).unwrap();
        let mut http = HttpConfig::new(url);
        http.authorization = Some("Bearer t".into());
        http.pool.max_connections = 2;
        http.limits.max_body_bytes = Some(10);
        http.open_get_stream = false;
        let repr = HttpRepr::of(&http);
        let text = serde_json::to_string(&repr).unwrap();
        let back = serde_json::from_str::<HttpRepr>(&text)
            .unwrap()
            .config()
            .unwrap();
        assert_eq!(back.url, http.url);
        assert_eq!(back.authorization, http.authorization);
        assert_eq!(back.pool.max_connections, 2);
        assert_eq!(back.limits, http.limits);
        assert!(!back.open_get_stream);
        assert_eq!(back.user_agent, http.user_agent);
        let unknown = r#"{"url":"https://example.com/","frobs":1}"#;
        assert!(
            serde_json::from_str::<HttpRepr>(unknown)
                .unwrap()
                .config()
                .is_err()
        );
    }
}
