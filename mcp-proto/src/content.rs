//! Typed views of content: the blocks of a tool result or a prompt message, and the
//! contents of a resource read.
//!
//! Every view borrows from the JSON the client already holds (a
//! [`CallOutput::result`](crate::client::CallOutput::result), a
//! [`CallToolResult`]'s verbatim blocks): strings without escapes are not copied, and
//! base64 payloads stay text until [`Base64::decode`] is asked for them, with a bound.
//! Each view keeps the block it came from ([`Content::raw`]), so a block of a type this
//! library does not know ([`Content::Unknown`]), or members it does not model, pass on
//! byte for byte.
//!
//! Parsing a block is one pass over its bytes (after the pass that found where it
//! ends); a block that is not what its `type` says is [`Content::Malformed`], never a
//! panic.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::model::CallToolResult;

/// One content block (`ContentBlock`), viewed in place.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Content<'a> {
    /// `type: "text"`.
    Text(TextContent<'a>),
    /// `type: "image"`: base64 data with a MIME type.
    Image(MediaContent<'a>),
    /// `type: "audio"`: base64 data with a MIME type.
    Audio(MediaContent<'a>),
    /// `type: "resource_link"`: a URI the client may read.
    ResourceLink(ResourceLink<'a>),
    /// `type: "resource"`: a resource embedded whole.
    Resource(EmbeddedResource<'a>),
    /// A `type` this library does not know, kept verbatim.
    Unknown(&'a RawValue),
    /// A known `type` whose members do not have the required shape (an image without
    /// `data`, say), or a block that is not an object; kept verbatim.
    Malformed(&'a RawValue),
}

/// A `text` block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TextContent<'a> {
    /// The text.
    pub text: Cow<'a, str>,
    /// `annotations`, verbatim.
    pub annotations: Option<&'a RawValue>,
    /// The whole block, verbatim.
    pub raw: &'a RawValue,
}

/// An `image` or `audio` block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MediaContent<'a> {
    /// The base64 data, not decoded.
    pub data: Base64<'a>,
    /// The MIME type (`image/png`, `audio/wav`, …).
    pub mime_type: Cow<'a, str>,
    /// `annotations`, verbatim.
    pub annotations: Option<&'a RawValue>,
    /// The whole block, verbatim.
    pub raw: &'a RawValue,
}

/// A `resource_link` block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceLink<'a> {
    /// The resource URI.
    pub uri: Cow<'a, str>,
    /// Programmatic name.
    pub name: Cow<'a, str>,
    /// Human-readable name.
    pub title: Option<Cow<'a, str>>,
    /// What it is.
    pub description: Option<Cow<'a, str>>,
    /// The MIME type, when known.
    pub mime_type: Option<Cow<'a, str>>,
    /// Size in bytes, when the server said.
    pub size: Option<u64>,
    /// `annotations`, verbatim.
    pub annotations: Option<&'a RawValue>,
    /// The whole block, verbatim.
    pub raw: &'a RawValue,
}

/// A `resource` block: the resource's contents embedded in the block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmbeddedResource<'a> {
    /// The contents.
    pub resource: ResourceContents<'a>,
    /// `annotations`, verbatim.
    pub annotations: Option<&'a RawValue>,
    /// The whole block, verbatim.
    pub raw: &'a RawValue,
}

/// The contents of one resource: an item of `resources/read`'s `contents`, or the
/// `resource` of an embedded block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceContents<'a> {
    /// The resource URI.
    pub uri: Cow<'a, str>,
    /// The MIME type, when known.
    pub mime_type: Option<Cow<'a, str>>,
    /// Text or binary.
    pub body: ResourceBody<'a>,
}

/// What a resource holds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ResourceBody<'a> {
    /// `text`.
    Text(Cow<'a, str>),
    /// `blob`: base64, not decoded.
    Blob(Base64<'a>),
}

/// Base64 text as the server sent it; decoded only on request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base64<'a>(Cow<'a, str>);

/// Why base64 data could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The data would decode to more bytes than the caller allowed.
    #[error("{len} bytes of data exceed the limit of {max} bytes")]
    TooLarge {
        /// Bytes it would decode to.
        len: usize,
        /// The caller's bound.
        max: usize,
    },
    /// Not base64.
    #[error("invalid base64: {0}")]
    Invalid(String),
}

impl<'a> Base64<'a> {
    /// Base64 text.
    #[must_use]
    pub fn new(text: impl Into<Cow<'a, str>>) -> Self {
        Base64(text.into())
    }

    /// The text, as sent.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number of bytes the data decodes to (computed from its length and padding,
    /// without decoding; exact for well-formed base64).
    #[must_use]
    pub fn decoded_len(&self) -> usize {
        let n = self
            .0
            .trim_end_matches(['\r', '\n', ' '])
            .trim_end_matches('=')
            .len();
        (n / 4) * 3
            + match n % 4 {
                2 => 1,
                3 => 2,
                _ => 0,
            }
    }

    /// The decoded bytes, refused before any work when they would exceed `max`.
    ///
    /// # Errors
    /// [`DecodeError::TooLarge`] over `max`, [`DecodeError::Invalid`] for text that is
    /// not standard base64 (padding optional).
    pub fn decode(&self, max: usize) -> Result<Vec<u8>, DecodeError> {
        let len = self.decoded_len();
        if len > max {
            return Err(DecodeError::TooLarge { len, max });
        }
        let engine = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        engine
            .decode(self.0.trim_end_matches(['\r', '\n', ' ']))
            .map_err(|e| DecodeError::Invalid(e.to_string()))
    }
}

/// A string borrowed from the input when it has no escapes (base64 never has), copied
/// otherwise; `null` is `None`.
fn opt_cow<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

/// As [`opt_cow`], for a required string.
fn cow<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cow<'de, str>, D::Error> {
    opt_cow(d)?.ok_or_else(|| serde::de::Error::custom("expected a string"))
}

/// Every member a known block may have, read in one pass.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    data: Option<Cow<'a, str>>,
    #[serde(rename = "mimeType", default, borrow, deserialize_with = "opt_cow")]
    mime_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    uri: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    title: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    description: Option<Cow<'a, str>>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default, borrow)]
    resource: Option<ContentsFields<'a>>,
    #[serde(default, borrow)]
    annotations: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ContentsFields<'a> {
    #[serde(borrow, deserialize_with = "cow")]
    uri: Cow<'a, str>,
    #[serde(rename = "mimeType", default, borrow, deserialize_with = "opt_cow")]
    mime_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    blob: Option<Cow<'a, str>>,
}

impl<'a> ContentsFields<'a> {
    fn typed(self) -> Option<ResourceContents<'a>> {
        let body = match (self.text, self.blob) {
            (Some(t), None) => ResourceBody::Text(t),
            (None, Some(b)) => ResourceBody::Blob(Base64(b)),
            _ => return None,
        };
        Some(ResourceContents {
            uri: self.uri,
            mime_type: self.mime_type,
            body,
        })
    }
}

impl<'a> Content<'a> {
    /// The typed view of one verbatim block.
    #[must_use]
    pub fn parse(raw: &'a RawValue) -> Content<'a> {
        let Ok(f) = serde_json::from_str::<Fields<'a>>(raw.get()) else {
            // Not an object with a string `type`: nothing to type, keep it as it is.
            return match serde_json::from_str::<TypeOnly<'_>>(raw.get()) {
                Ok(t) if !KNOWN.contains(&&*t.kind) => Content::Unknown(raw),
                _ => Content::Malformed(raw),
            };
        };
        let annotations = f.annotations;
        match &*f.kind {
            "text" => match f.text {
                Some(text) => Content::Text(TextContent {
                    text,
                    annotations,
                    raw,
                }),
                None => Content::Malformed(raw),
            },
            kind @ ("image" | "audio") => match (f.data, f.mime_type) {
                (Some(data), Some(mime_type)) => {
                    let media = MediaContent {
                        data: Base64(data),
                        mime_type,
                        annotations,
                        raw,
                    };
                    if kind == "image" {
                        Content::Image(media)
                    } else {
                        Content::Audio(media)
                    }
                }
                _ => Content::Malformed(raw),
            },
            "resource_link" => match (f.uri, f.name) {
                (Some(uri), Some(name)) => Content::ResourceLink(ResourceLink {
                    uri,
                    name,
                    title: f.title,
                    description: f.description,
                    mime_type: f.mime_type,
                    size: f.size,
                    annotations,
                    raw,
                }),
                _ => Content::Malformed(raw),
            },
            "resource" => match f.resource.and_then(ContentsFields::typed) {
                Some(resource) => Content::Resource(EmbeddedResource {
                    resource,
                    annotations,
                    raw,
                }),
                None => Content::Malformed(raw),
            },
            _ => Content::Unknown(raw),
        }
    }

    /// The block, verbatim.
    #[must_use]
    pub fn raw(&self) -> &'a RawValue {
        match self {
            Content::Text(t) => t.raw,
            Content::Image(m) | Content::Audio(m) => m.raw,
            Content::ResourceLink(l) => l.raw,
            Content::Resource(r) => r.raw,
            Content::Unknown(raw) | Content::Malformed(raw) => raw,
        }
    }

    /// The text of a `text` block, or of an embedded text resource.
    #[must_use]
    pub fn text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            Content::Resource(EmbeddedResource {
                resource:
                    ResourceContents {
                        body: ResourceBody::Text(t),
                        ..
                    },
                ..
            }) => Some(t),
            _ => None,
        }
    }

    /// The block's `annotations`, verbatim.
    #[must_use]
    pub fn annotations(&self) -> Option<&'a RawValue> {
        match self {
            Content::Text(t) => t.annotations,
            Content::Image(m) | Content::Audio(m) => m.annotations,
            Content::ResourceLink(l) => l.annotations,
            Content::Resource(r) => r.annotations,
            Content::Unknown(_) | Content::Malformed(_) => None,
        }
    }
}

#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

const KNOWN: [&str; 5] = ["text", "image", "audio", "resource_link", "resource"];

/// Typed views of verbatim blocks, in order.
pub fn blocks<'a, I>(raw: I) -> impl Iterator<Item = Content<'a>>
where
    I: IntoIterator<Item = &'a RawValue>,
{
    raw.into_iter().map(Content::parse)
}

/// The text of every `text` block, joined with newlines (embedded resources and other
/// blocks are left out).
#[must_use]
pub fn joined_text<'a>(blocks: impl IntoIterator<Item = Content<'a>>) -> String {
    let mut out = String::new();
    for block in blocks {
        if let Content::Text(t) = block {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&t.text);
        }
    }
    out
}

/// A summary of one binary block: what a text view shows in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MediaSummary<'a> {
    /// `"image"`, `"audio"` or `"blob"` (an embedded binary resource).
    pub kind: &'static str,
    /// The MIME type (`"application/octet-stream"` when an embedded blob has none).
    pub mime_type: Cow<'a, str>,
    /// Bytes it decodes to.
    pub bytes: usize,
}

impl<'a> Content<'a> {
    /// For image, audio and embedded binary blocks: the kind, MIME type and decoded
    /// size, without decoding.
    #[must_use]
    pub fn media(&self) -> Option<(MediaSummary<'a>, &Base64<'a>)> {
        match self {
            Content::Image(m) | Content::Audio(m) => Some((
                MediaSummary {
                    kind: if matches!(self, Content::Image(_)) {
                        "image"
                    } else {
                        "audio"
                    },
                    mime_type: m.mime_type.clone(),
                    bytes: m.data.decoded_len(),
                },
                &m.data,
            )),
            Content::Resource(EmbeddedResource {
                resource:
                    ResourceContents {
                        body: ResourceBody::Blob(b),
                        mime_type,
                        ..
                    },
                ..
            }) => Some((
                MediaSummary {
                    kind: "blob",
                    mime_type: mime_type
                        .clone()
                        .unwrap_or(Cow::Borrowed("application/octet-stream")),
                    bytes: b.decoded_len(),
                },
                b,
            )),
            _ => None,
        }
    }
}

impl CallToolResult {
    /// Typed views of the content blocks, in order.
    pub fn blocks(&self) -> impl Iterator<Item = Content<'_>> {
        blocks(self.content.iter().map(|b| &**b))
    }

    /// The image and audio blocks, with their MIME type and decoded size (embedded
    /// binary resources are left out: see [`Content::media`]).
    pub fn media(&self) -> impl Iterator<Item = MediaSummary<'_>> {
        self.blocks()
            .filter_map(|b| b.media().map(|(s, _)| s))
            .filter(|s| s.kind != "blob")
    }

    /// The `resource_link` blocks.
    pub fn resource_links(&self) -> impl Iterator<Item = ResourceLink<'_>> {
        self.blocks().filter_map(|b| match b {
            Content::ResourceLink(l) => Some(l),
            _ => None,
        })
    }
}

/// One message of a `prompts/get` result, viewed in place.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptMessage<'a> {
    /// `"user"` or `"assistant"`.
    pub role: Cow<'a, str>,
    /// The message's one content block.
    pub content: Content<'a>,
}

/// A `prompts/get` result, viewed in place.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptView<'a> {
    /// The prompt's description.
    pub description: Option<Cow<'a, str>>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage<'a>>,
}

#[derive(Deserialize)]
struct PromptFields<'a> {
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    description: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "crate::model::content_blocks")]
    messages: Vec<MessageFields<'a>>,
}

#[derive(Deserialize)]
struct MessageFields<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow)]
    content: &'a RawValue,
}

impl<'a> PromptView<'a> {
    /// Reads a `GetPromptResult`.
    ///
    /// # Errors
    /// The reason when it has no `messages` array of `{role, content}`, or one of more
    /// than [`MAX_CONTENT_BLOCKS`](crate::model::MAX_CONTENT_BLOCKS) messages.
    pub fn parse(result: &'a RawValue) -> Result<Self, serde_json::Error> {
        let f: PromptFields<'a> = serde_json::from_str(result.get())?;
        Ok(PromptView {
            description: f.description,
            messages: f
                .messages
                .into_iter()
                .map(|m| PromptMessage {
                    role: m.role,
                    content: Content::parse(m.content),
                })
                .collect(),
        })
    }
}

/// The `contents` of a `resources/read` result, viewed in place: each item typed, or
/// `Err` with the item verbatim when it has neither `text` nor `blob` (or both).
///
/// # Errors
/// The reason when the result has no `contents` array, or one of more than
/// [`MAX_CONTENT_BLOCKS`](crate::model::MAX_CONTENT_BLOCKS) items.
pub fn read_contents(
    result: &RawValue,
) -> Result<Vec<Result<ResourceContents<'_>, &RawValue>>, serde_json::Error> {
    #[derive(Deserialize)]
    struct Read<'a> {
        #[serde(borrow, deserialize_with = "crate::model::content_blocks")]
        contents: Vec<&'a RawValue>,
    }
    let read: Read<'_> = serde_json::from_str(result.get())?;
    Ok(read
        .contents
        .into_iter()
        .map(|raw| {
            serde_json::from_str::<ContentsFields<'_>>(raw.get())
                .ok()
                .and_then(ContentsFields::typed)
                .ok_or(raw)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn every_kind_is_typed_and_unknown_kinds_stay_verbatim() {
        let texts = [
            r#"{"type":"text","text":"hi","annotations":{"audience":["user"]}}"#,
            r#"{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}"#,
            r#"{"type":"audio","data":"AAEC","mimeType":"audio/wav"}"#,
            r#"{"type":"resource_link","uri":"file:///a","name":"a","size":3}"#,
            r#"{"type":"resource","resource":{"uri":"x://t","text":"inner"}}"#,
            r#"{"type":"resource","resource":{"uri":"x://b","blob":"AAAA","mimeType":"a/b"}}"#,
            r#"{"type":"hologram","z":[1, 2],  "w":"\u00e9"}"#,
            r#"{"type":"image","mimeType":"image/png"}"#,
            r#"[1]"#,
        ];
        let raws: Vec<Box<RawValue>> = texts.iter().map(|t| raw(t)).collect();
        let typed: Vec<Content<'_>> = blocks(raws.iter().map(|b| &**b)).collect();
        assert!(matches!(&typed[0], Content::Text(t) if t.text == "hi"));
        assert_eq!(
            typed[0].annotations().unwrap().get(),
            r#"{"audience":["user"]}"#
        );
        let (img, _) = typed[1].media().unwrap();
        assert_eq!(
            (img.kind, &*img.mime_type, img.bytes),
            ("image", "image/png", 5)
        );
        assert_eq!(typed[2].media().unwrap().0.bytes, 3);
        assert!(
            matches!(&typed[3], Content::ResourceLink(l) if l.uri == "file:///a" && l.size == Some(3))
        );
        assert_eq!(typed[4].text(), Some("inner"));
        assert_eq!(typed[5].media().unwrap().0.kind, "blob");
        assert!(matches!(typed[6], Content::Unknown(_)));
        assert!(matches!(typed[7], Content::Malformed(_)));
        assert!(matches!(typed[8], Content::Malformed(_)));
        for (block, text) in typed.iter().zip(texts) {
            assert_eq!(block.raw().get(), text);
        }
        assert_eq!(joined_text(typed), "hi");
    }

    #[test]
    fn unescaped_base64_is_borrowed_and_decoding_is_bounded() {
        let r = raw(r#"{"type":"image","data":"aGVsbG8","mimeType":"image/png"}"#);
        let Content::Image(m) = Content::parse(&r) else {
            panic!()
        };
        assert!(matches!(m.data.0, Cow::Borrowed(_)));
        assert_eq!(m.data.decoded_len(), 5);
        assert_eq!(m.data.decode(5).unwrap(), b"hello");
        assert_eq!(
            m.data.decode(4),
            Err(DecodeError::TooLarge { len: 5, max: 4 })
        );
        assert!(matches!(
            Base64::new("!!!!").decode(10),
            Err(DecodeError::Invalid(_))
        ));
        assert_eq!(Base64::new("").decoded_len(), 0);
        assert_eq!(Base64::new("QQ==").decoded_len(), 1);
        assert_eq!(Base64::new("QUI=").decoded_len(), 2);
    }

    #[test]
    fn the_fuzz_harness_holds_on_edge_cases() {
        for text in [
            r#"{"type":"image","data":"QQ=","mimeType":"a"}"#,
            r#"{"type":"image","data":"Q===","mimeType":"a"}"#,
            r#"{"type":"audio","data":"====","mimeType":"a"}"#,
            r#"{"type":"audio","data":"QUJD\n","mimeType":"a"}"#,
            r#"{"type":"image","data":"QU\/D","mimeType":"a"}"#,
            r#"{"type":"resource","resource":{"uri":"u","blob":"QQ"}}"#,
            r#"{"contents":[{"uri":"u","blob":"QUJDRA=="},{"uri":1}]}"#,
            r#"{"messages":[{"role":"user","content":{"type":"text","text":null}}]}"#,
            r#"{"type":"text","text":"a","text":"b"}"#,
            "null",
            "[]",
        ] {
            crate::fuzzing::content_blocks(text.as_bytes());
        }
    }

    #[test]
    fn prompt_messages_and_read_contents() {
        let r = raw(
            r#"{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"a"}},
            {"role":"assistant","content":{"type":"x-new","v":1}}]}"#,
        );
        let p = PromptView::parse(&r).unwrap();
        assert_eq!(p.description.as_deref(), Some("d"));
        assert_eq!(p.messages[0].content.text(), Some("a"));
        assert!(matches!(p.messages[1].content, Content::Unknown(_)));
        let r =
            raw(r#"{"contents":[{"uri":"a","text":"t"},{"uri":"b","blob":"AA=="},{"uri":"c"}]}"#);
        let c = read_contents(&r).unwrap();
        assert!(
            matches!(&c[0], Ok(ResourceContents { body: ResourceBody::Text(t), .. }) if t == "t")
        );
        assert!(
            matches!(&c[1], Ok(ResourceContents { body: ResourceBody::Blob(b), .. }) if b.decoded_len() == 1)
        );
        assert_eq!(c[2].as_ref().unwrap_err().get(), r#"{"uri":"c"}"#);
        assert!(read_contents(&raw("{}")).is_err());
    }
}
