//! Typed views of the MCP messages a client sends and receives, for all three versions.
//!
//! Everything a server defines and a client must pass on untouched — tool `inputSchema`
//! and `outputSchema`, `structuredContent`, `_meta`, content blocks, unknown fields — is
//! kept as raw JSON text ([`RawValue`]) or in a catch-all map, so nothing is reordered,
//! reformatted or lost on the way through.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::version::ProtocolVersion;

/// Name and version of a client or server (`Implementation`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Other fields (`description`, `icons`, `websiteUrl`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// An implementation with just a name and a version.
    #[must_use]
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            extra: Map::new(),
        }
    }
}

/// What the client can do for a server. Serialised per version by
/// [`ClientCapabilities::to_json`].
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// Form-mode elicitation (the server may ask the user to fill a form).
    pub elicitation_form: bool,
    /// URL-mode elicitation (2025-11-25 and later).
    pub elicitation_url: bool,
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// 2025-11-25 on: sampling requests may carry `tools` and `toolChoice`
    /// (`sampling.tools`). Without it such a request is refused.
    pub sampling_tools: bool,
    /// 2025-11-25 on: sampling requests may ask for `includeContext` other than `none`
    /// (`sampling.context`). Without it such a request is refused.
    pub sampling_context: bool,
    /// `roots/list`.
    pub roots: bool,
    /// Legacy era: the client sends `notifications/roots/list_changed` when its roots
    /// change (`roots.listChanged`). Never declared in 2026-07-28.
    pub roots_list_changed: bool,
    /// Extensions (2026-07-28), id → settings.
    pub extensions: Map<String, Value>,
}

impl ClientCapabilities {
    /// No optional capability.
    #[must_use]
    pub fn none() -> Self {
        Self::default()
    }

    /// Form elicitation only: the common interactive client.
    #[must_use]
    pub fn with_elicitation() -> Self {
        ClientCapabilities {
            elicitation_form: true,
            ..Self::default()
        }
    }

    /// The same capabilities declaring the 2026-07-28 tasks extension
    /// (`io.modelcontextprotocol/tasks`) on every request: a `tools/call` may then come
    /// back as a task, which the client machine follows to its end behind the one call.
    /// It means nothing in the legacy era, where a call asks for a task itself
    /// ([`CallRequest::as_task`](crate::client::CallRequest::as_task)).
    #[must_use]
    pub fn with_tasks(mut self) -> Self {
        self.extensions.insert(
            crate::client::TASKS_EXTENSION.to_owned(),
            Value::Object(Map::new()),
        );
        self
    }

    /// Whether the tasks extension is declared (see [`ClientCapabilities::with_tasks`]).
    #[must_use]
    pub fn declares_tasks(&self) -> bool {
        self.extensions.contains_key(crate::client::TASKS_EXTENSION)
    }

    /// The capabilities object as `version` spells it.
    #[must_use]
    pub fn to_json(&self, version: ProtocolVersion) -> Value {
        let mut caps = Map::new();
        // 2025-06-18 elicitation is forms only: `elicitation: {}` there would promise
        // forms to a client that does only URLs.
        let modes = version >= ProtocolVersion::V2025_11_25;
        if self.elicitation_form || (modes && self.elicitation_url) {
            let mut e = Map::new();
            if modes {
                if self.elicitation_form {
                    e.insert("form".into(), Value::Object(Map::new()));
                }
                if self.elicitation_url {
                    e.insert("url".into(), Value::Object(Map::new()));
                }
            }
            caps.insert("elicitation".into(), Value::Object(e));
        }
        if self.sampling {
            let mut s = Map::new();
            if version >= ProtocolVersion::V2025_11_25 {
                if self.sampling_tools {
                    s.insert("tools".into(), Value::Object(Map::new()));
                }
                if self.sampling_context {
                    s.insert("context".into(), Value::Object(Map::new()));
                }
            }
            caps.insert("sampling".into(), Value::Object(s));
        }
        if self.roots {
            let mut r = Map::new();
            if version < ProtocolVersion::V2026_07_28 {
                r.insert("listChanged".into(), Value::Bool(self.roots_list_changed));
            }
            caps.insert("roots".into(), Value::Object(r));
        }
        if version >= ProtocolVersion::V2026_07_28 && !self.extensions.is_empty() {
            caps.insert("extensions".into(), Value::Object(self.extensions.clone()));
        }
        Value::Object(caps)
    }
}

/// What the client learned about the server when the connection was established.
#[derive(Clone, Debug)]
pub struct ServerDetails {
    /// The negotiated protocol version.
    pub protocol_version: ProtocolVersion,
    /// The server's `Implementation`, when it sent one.
    pub server_info: Option<Implementation>,
    /// The server capabilities, verbatim.
    pub capabilities: Value,
    /// The server's instructions for the model.
    pub instructions: Option<String>,
    /// 2026-07-28: every version the server listed in `supportedVersions`.
    pub supported_versions: Vec<String>,
}

impl ServerDetails {
    /// Whether the server declared capability `name` (e.g. `"tools"`).
    #[must_use]
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some()
    }
}

/// A tool as listed by `tools/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tool {
    /// The tool name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments, verbatim.
    #[serde(rename = "inputSchema")]
    pub input_schema: Box<RawValue>,
    /// The JSON Schema of `structuredContent`, verbatim.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Box<RawValue>>,
    /// Other fields (`annotations`, `icons`, `execution`, `_meta`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Content blocks one tool result may hold when it is read (and messages one prompt, items
/// one `resources/read` result); more fails the read, naming this bound. Each block read costs a record of its own, many times the 3 bytes of a
/// `{}`: without a count, an 8 MiB answer of empty blocks held 73 MB read as
/// [`CallToolResult`] and 537 MB as typed views (`CallOutput::content`).
pub const MAX_CONTENT_BLOCKS: usize = 100_000;

/// The result of `tools/call`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CallToolResult {
    /// Content blocks, verbatim (at most [`MAX_CONTENT_BLOCKS`] when read).
    #[serde(default, deserialize_with = "content_blocks")]
    pub content: Vec<Box<RawValue>>,
    /// Structured output, verbatim.
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Box<RawValue>>,
    /// True when the tool failed (the model should see it).
    #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`, verbatim.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<RawValue>>,
    // Other members are not collected: a catch-all map costs the whole result a second
    // pass. The exact result, every member included, is `CallOutput::result`.
}

impl CallToolResult {
    /// The text of the `text` content blocks, joined with newlines (see
    /// [`crate::content`] for every kind of block).
    #[must_use]
    pub fn text(&self) -> String {
        crate::content::joined_text(self.blocks())
    }
}

/// A resource as listed by `resources/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Resource {
    /// The resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Other fields, verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A prompt as listed by `prompts/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Prompt {
    /// The prompt name.
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Other fields (`arguments`, `title`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The user's verdict on an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form (or consented to the URL).
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

/// The params of an `elicitation/create` request (legacy request or MRTR input).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ElicitationParams {
    /// `"form"` (the default when absent) or `"url"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to show the user.
    pub message: String,
    /// Form mode: the flat object schema of the answer, verbatim.
    #[serde(
        rename = "requestedSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub requested_schema: Option<Box<RawValue>>,
    /// URL mode: the URL to open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Other fields (`elicitationId`, `_meta`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitationParams {
    /// True for URL mode.
    #[must_use]
    pub fn is_url_mode(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }

    /// The answer a user who accepts every default would give: each property of the
    /// requested schema that has a `default`, with that value.
    #[must_use]
    pub fn defaults(&self) -> Map<String, Value> {
        let mut out = Map::new();
        let Some(schema) = &self.requested_schema else {
            return out;
        };
        let Ok(schema) = serde_json::from_str::<Value>(schema.get()) else {
            return out;
        };
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                if let Some(d) = prop.get("default") {
                    out.insert(name.clone(), d.clone());
                }
            }
        }
        out
    }
}

/// The answer to an elicitation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form values (accept in form mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

/// A resource template as listed by `resources/templates/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template.
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of the resources it names.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Other fields (`title`, `annotations`, `icons`, `_meta`, …), verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a `completion/complete` request completes an argument of.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionRef {
    /// An argument of the prompt with this name (`ref/prompt`).
    Prompt(String),
    /// A variable of the resource template with this URI template (`ref/resource`).
    ResourceTemplate(String),
}

impl CompletionRef {
    /// The `ref` object of the request.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        match self {
            CompletionRef::Prompt(name) => {
                m.insert("type".into(), Value::String("ref/prompt".into()));
                m.insert("name".into(), Value::String(name.clone()));
            }
            CompletionRef::ResourceTemplate(uri) => {
                m.insert("type".into(), Value::String("ref/resource".into()));
                m.insert("uri".into(), Value::String(uri.clone()));
            }
        }
        Value::Object(m)
    }
}

/// The `completion` of a `completion/complete` result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Completion {
    /// The suggested values (at most 100, by the spec).
    pub values: Vec<String>,
    /// How many values there are in all, when the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More values exist than were sent.
    #[serde(rename = "hasMore", default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// Reads an array of at most [`MAX_CONTENT_BLOCKS`] elements, refusing the next one
/// before it is kept: the bound on a tool result's `content` (owned or borrowed), a
/// prompt's `messages` and a read resource's `contents`.
pub(crate) fn content_blocks<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Blocks<T>(std::marker::PhantomData<T>);

    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Blocks<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut blocks = Vec::new();
            while let Some(block) = seq.next_element()? {
                if blocks.len() == MAX_CONTENT_BLOCKS {
                    return Err(serde::de::Error::custom(format_args!(
                        "an array of more than {MAX_CONTENT_BLOCKS} blocks (MAX_CONTENT_BLOCKS)"
                    )));
                }
                blocks.push(block);
            }
            Ok(blocks)
        }
    }

    deserializer.deserialize_seq(Blocks(std::marker::PhantomData))
}
