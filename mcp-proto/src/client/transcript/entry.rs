//! The lines of a transcript: the header, timed entries, and the truncation mark.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::{ClientRepr, HttpRepr};
use crate::client::{ApiMisuse, CallId, InputId, Transmit};
use crate::jsonrpc::ErrorObject;

/// Bytes: `text` when they are UTF-8, else `b64`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub(crate) struct Data {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b64: Option<String>,
}

impl Data {
    pub(crate) fn of(bytes: &[u8]) -> Data {
        match std::str::from_utf8(bytes) {
            Ok(text) => Data {
                text: Some(text.to_owned()),
                b64: None,
            },
            Err(_) => Data {
                text: None,
                b64: Some(STANDARD.encode(bytes)),
            },
        }
    }

    pub(crate) fn bytes(&self) -> Result<Vec<u8>, String> {
        match (&self.text, &self.b64) {
            (Some(text), None) => Ok(text.clone().into_bytes()),
            (None, Some(b64)) => STANDARD.decode(b64).map_err(|e| format!("base64: {e}")),
            (None, None) => Ok(Vec::new()),
            (Some(_), Some(_)) => Err("both text and b64".to_owned()),
        }
    }
}

/// The first line: what a fresh machine is built from.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Header {
    /// [`super::FORMAT`].
    pub(crate) transcript: String,
    /// `stdio` or `http`.
    pub(crate) transport: String,
    /// The machine's first instant, in nanoseconds from the caller's origin.
    pub(crate) origin_ns: u64,
    /// Recording started after the machine had been used: not replayable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) midway: bool,
    pub(crate) client: ClientRepr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) http: Option<HttpRepr>,
    /// What the [`super::Redaction`] that rewrote the lines says about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) redaction: Option<Value>,
}

/// A request as the `call` command took it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct RequestRepr {
    pub(crate) method: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) params: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout: Option<std::time::Duration>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) progress: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) list_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) log_level: Option<crate::client::LogLevel>,
    /// [`CallRequest::as_task`](crate::client::CallRequest::as_task), with its `ttl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<TaskAskRepr>,
}

/// A call's request to run as a task.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct TaskAskRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl: Option<std::time::Duration>,
}

/// An answer as the `respond` command took it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AnswerRepr {
    Result(Value),
    Error(ErrorObject),
}

/// An input or a command, with what a command returned.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "in", rename_all = "snake_case")]
pub(crate) enum In {
    Connected {
        conn: u64,
    },
    Read {
        conn: u64,
        #[serde(flatten)]
        data: Data,
    },
    Written {
        conn: u64,
        bytes: usize,
    },
    Eof {
        conn: u64,
    },
    ProcessExited,
    TransportError {
        conn: u64,
        kind: String,
        detail: String,
    },
    Timeout,
    Call {
        request: RequestRepr,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        misuse: Option<String>,
    },
    Respond {
        input: u64,
        answer: AnswerRepr,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        misuse: Option<String>,
    },
    Cancel {
        call: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        misuse: Option<String>,
    },
    Close,
    SetRoots {
        roots: Vec<crate::client::Root>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        misuse: Option<String>,
    },
    SetAuthorization {
        value: Option<String>,
    },
}

/// What an API misuse is recorded as.
pub(crate) fn misuse<T>(result: &Result<T, ApiMisuse>) -> Option<String> {
    result.as_ref().err().map(|e| format!("{e:?}"))
}

impl In {
    pub(crate) fn call(request: RequestRepr, result: &Result<CallId, ApiMisuse>) -> In {
        In::Call {
            request,
            call: result.as_ref().ok().map(|c| c.0),
            misuse: misuse(result),
        }
    }

    pub(crate) fn respond(
        input: InputId,
        answer: AnswerRepr,
        result: &Result<(), ApiMisuse>,
    ) -> In {
        In::Respond {
            input: input.0,
            answer,
            misuse: misuse(result),
        }
    }
}

/// An output the driver polled.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "out", rename_all = "snake_case")]
pub(crate) enum Out {
    Connect {
        conn: u64,
        origin: String,
    },
    Write {
        conn: u64,
        #[serde(flatten)]
        data: Data,
    },
    Close {
        conn: u64,
    },
    Respawn,
    NoTransmit,
    Event {
        event: String,
    },
    NoEvent,
    /// `poll_timeout` changed: nanoseconds from the first instant, or none.
    Deadline {
        at: Option<i64>,
    },
}

impl Out {
    /// What `poll_transmit` gave (`bytes`: what a `Write` appended).
    pub(crate) fn transmit(transmit: Option<&Transmit>, bytes: &[u8]) -> Out {
        match transmit {
            None => Out::NoTransmit,
            Some(Transmit::Connect { conn, origin }) => Out::Connect {
                conn: conn.0,
                origin: origin.to_string(),
            },
            Some(Transmit::Write { conn, .. }) => Out::Write {
                conn: conn.0,
                data: Data::of(bytes),
            },
            Some(Transmit::Close { conn }) => Out::Close { conn: conn.0 },
            Some(Transmit::Respawn) => Out::Respawn,
        }
    }

    /// What `poll_event` gave.
    pub(crate) fn event(event: Option<&crate::client::Event>) -> Out {
        match event {
            Some(e) => Out::Event {
                event: format!("{e:?}"),
            },
            None => Out::NoEvent,
        }
    }
}

/// An entry and the `t` it happened at.
#[derive(Serialize, Deserialize)]
struct Timed<T> {
    t: i64,
    #[serde(flatten)]
    step: T,
}

/// The mark of a recording cut short.
#[derive(Serialize, Deserialize)]
struct Truncated {
    truncated: TruncatedAt,
}

#[derive(Serialize, Deserialize)]
struct TruncatedAt {
    budget: usize,
}

/// One line, parsed.
#[derive(Debug, Clone)]
pub(crate) enum Line {
    Header(Box<Header>),
    In(i64, In),
    Out(i64, Out),
    Truncated,
}

impl Line {
    pub(crate) fn parse(text: &str) -> Result<Line, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Some(object) = value.as_object() else {
            return Err("not a JSON object".to_owned());
        };
        let e = |e: serde_json::Error| e.to_string();
        if object.contains_key("transcript") {
            let header: Header = serde_json::from_value(value).map_err(e)?;
            if header.transcript != super::FORMAT {
                return Err(format!("unknown transcript format {:?}", header.transcript));
            }
            Ok(Line::Header(Box::new(header)))
        } else if object.contains_key("in") {
            let Timed { t, step } = serde_json::from_value(value).map_err(e)?;
            Ok(Line::In(t, step))
        } else if object.contains_key("out") {
            let Timed { t, step } = serde_json::from_value(value).map_err(e)?;
            Ok(Line::Out(t, step))
        } else if object.contains_key("truncated") {
            Ok(Line::Truncated)
        } else if let Some(why) = object.get("unreadable") {
            Err(format!(
                "the recorder could not read this line back to redact it, so it was left out ({})",
                why.get("error").and_then(Value::as_str).unwrap_or("?")
            ))
        } else {
            Err("neither a header nor an entry".to_owned())
        }
    }

    pub(crate) fn header(header: &Header) -> String {
        to_line(header)
    }

    pub(crate) fn input(t: i64, step: &In) -> String {
        to_line(&Timed { t, step })
    }

    pub(crate) fn output(t: i64, step: &Out) -> String {
        to_line(&Timed { t, step })
    }

    /// What stands for a line of `bytes` bytes that could not be read back (`error`),
    /// and so not redacted.
    pub(crate) fn unreadable(bytes: usize, error: &str) -> String {
        to_line(&serde_json::json!({ "unreadable": { "bytes": bytes, "error": error } }))
    }

    pub(crate) fn truncated(budget: usize) -> String {
        to_line(&Truncated {
            truncated: TruncatedAt { budget },
        })
    }
}

fn to_line<T: Serialize>(value: &T) -> String {
    // Every type here serialises: string keys, no maps with other keys.
    serde_json::to_string(value).unwrap_or_default()
}

/// An entry without its time, as a mismatch shows it.
pub(crate) fn show<T: Serialize>(step: &T) -> String {
    to_line(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_text_when_they_can_be() {
        assert_eq!(
            Line::input(
                5,
                &In::Read {
                    conn: 1,
                    data: Data::of(b"{\"a\":1}\n")
                }
            ),
            r#"{"t":5,"in":"read","conn":1,"text":"{\"a\":1}\n"}"#
        );
        let binary = Data::of(&[0xff, 0x00, b'a']);
        assert_eq!(
            Line::output(
                -3,
                &Out::Write {
                    conn: 0,
                    data: binary.clone()
                }
            ),
            r#"{"t":-3,"out":"write","conn":0,"b64":"/wBh"}"#
        );
        assert_eq!(binary.bytes().unwrap(), [0xff, 0x00, b'a']);
    }

    #[test]
    fn entries_read_back_as_written() {
        let entries = [
            In::Timeout,
            In::Close,
            In::SetAuthorization { value: None },
            In::TransportError {
                conn: 2,
                kind: "refused".into(),
                detail: "no".into(),
            },
            In::Respond {
                input: 1,
                answer: AnswerRepr::Error(ErrorObject::new(-1, "x")),
                misuse: Some("UnknownInput(InputId(1))".into()),
            },
        ];
        for step in entries {
            let line = Line::input(7, &step);
            let Ok(Line::In(7, back)) = Line::parse(&line) else {
                panic!("{line}")
            };
            assert_eq!(back, step, "{line}");
        }
        let line = Line::output(1, &Out::Deadline { at: None });
        assert_eq!(line, r#"{"t":1,"out":"deadline","at":null}"#);
        assert!(matches!(
            Line::parse(&line),
            Ok(Line::Out(1, Out::Deadline { at: None }))
        ));
        assert!(matches!(
            Line::parse(&Line::truncated(9)),
            Ok(Line::Truncated)
        ));
        assert!(Line::parse(r#"{"t":1,"in":"fly"}"#).is_err());
        assert!(Line::parse("[]").is_err());
    }
}
