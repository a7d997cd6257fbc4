//! `x-mcp-header` annotations in a tool's `inputSchema` (2026-07-28, SEP-2243).
//!
//! A property schema may carry `"x-mcp-header": "<Name>"`; a client on Streamable HTTP
//! then mirrors that argument into `Mcp-Param-<Name>`. [`tool_param_headers`] checks
//! every annotation of one tool and returns the declarations, or the first reason the
//! tool is invalid. The client must then leave that tool out of the list it exposes (on
//! Streamable HTTP only) and should log the reason. [`extract_param_values`] turns a
//! call's arguments into header pairs.
//!
//! # Rules (spec section 5.2, with our readings of the open points)
//!
//! * The annotation is a non-empty string made of RFC 9110 `tchar`s, at most
//!   [`MAX_HEADER_NAME_BYTES`] long, case-insensitively unique across the whole schema,
//!   nested ones included.
//! * The annotated schema's `type` is exactly one of `"string"`, `"integer"`,
//!   `"boolean"`. `"number"` is refused (design decision 1: the released spec forbids it,
//!   even though an older conformance release and the TypeScript SDK accept it). A missing
//!   `type` and a type array (`["string", "null"]`) are refused too.
//! * The annotated schema is reached from the root through `properties` members only,
//!   at least one step (nesting through `properties` is fine; the spec wins over the
//!   SEP's table). An annotation found under any other keyword (`items`, `prefixItems`,
//!   `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `additionalProperties`,
//!   `patternProperties`, `$defs`/`definitions`, `dependentSchemas`, unknown keywords…)
//!   or on the root itself invalidates the tool. `$ref` is never followed, so a property
//!   that points at an annotated definition is reported through the definition.
//! * Instance data is not schema: `const`, `default`, `enum` and `examples` values are
//!   not searched, and a *property named* `x-mcp-header` is just a property.
//!
//! The schema is first read for what can bear on its annotations only (`pruned.rs`), so
//! a large schema from a server costs about what its annotations take as text, and
//! nesting past [`MAX_SCHEMA_DEPTH`] levels makes the tool invalid
//! ([`InvalidAnnotation::TooDeep`]). The walk itself is iterative. Declarations come out
//! in a pre-order walk of the schema in `serde_json` map order (keys sorted).

mod pruned;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

pub use pruned::MAX_SCHEMA_DEPTH;
use pruned::{Node, Unread};

use super::chars::is_tchar;
use super::headers::{HeaderError, MCP_PARAM_PREFIX, encode_header_value, primitive_text};

/// The annotation keyword.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// Most `x-mcp-header` declarations one tool may make: each becomes a request header, and
/// no reasonable tool mirrors more arguments than this. A tool declaring more is excluded
/// ([`InvalidAnnotation::TooMany`]).
pub const MAX_PARAM_HEADERS: usize = 64;

/// Longest `x-mcp-header` annotation, in bytes: the server chooses it, and each call of
/// the tool writes it (after `Mcp-Param-`) into a request head. A longer one makes the
/// tool invalid ([`InvalidAnnotation::TooLong`]), so that the head a server can make the
/// client write stays bounded.
pub const MAX_HEADER_NAME_BYTES: usize = 256;

/// Keywords whose values are instance data, never schemas.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];
/// Keywords whose values map names to schemas (besides `properties`).
const SCHEMA_MAP_KEYWORDS: [&str; 5] = [
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// The types an annotated property may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Primitive {
    /// `"type": "string"`: sent as is.
    String,
    /// `"type": "integer"`: canonical decimal within ±(2^53−1).
    Integer,
    /// `"type": "boolean"`: `true` / `false`.
    Boolean,
}

impl Primitive {
    /// The JSON Schema type name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Primitive::String => "string",
            Primitive::Integer => "integer",
            Primitive::Boolean => "boolean",
        }
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One valid `x-mcp-header` declaration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamHeader {
    /// The annotation value as declared: the header is `Mcp-Param-{name}`.
    pub name: String,
    /// Property names from the arguments object down to the value.
    pub path: Vec<String>,
    /// The declared type.
    pub kind: Primitive,
}

impl ParamHeader {
    /// The full header name, `Mcp-Param-{name}`.
    #[must_use]
    pub fn header_name(&self) -> String {
        format!("{MCP_PARAM_PREFIX}{}", self.name)
    }
}

/// Why a tool's `x-mcp-header` annotations make it unusable over Streamable HTTP. `at`
/// is the JSON Pointer (RFC 6901) of the annotated schema inside `inputSchema`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidAnnotation {
    /// The annotation is not a JSON string.
    #[error("x-mcp-header at {at:?} is not a string")]
    NotAString {
        /// Where.
        at: String,
    },
    /// The annotation is the empty string.
    #[error("x-mcp-header at {at:?} is empty")]
    Empty {
        /// Where.
        at: String,
    },
    /// The annotation is longer than [`MAX_HEADER_NAME_BYTES`].
    #[error("x-mcp-header at {at:?} is longer than {limit} bytes")]
    TooLong {
        /// Where.
        at: String,
        /// The limit in force.
        limit: usize,
    },
    /// The annotation has a character outside the RFC 9110 `tchar` set (space, control
    /// character, non-ASCII, or a delimiter).
    #[error("x-mcp-header {name:?} at {at:?} is not an RFC 9110 token")]
    NotAToken {
        /// Where.
        at: String,
        /// The annotation.
        name: String,
    },
    /// The annotation sits on the root schema, which is not a property.
    #[error("x-mcp-header on the inputSchema root")]
    OnRoot,
    /// The annotated schema is not reached through `properties` alone.
    #[error("x-mcp-header at {at:?} is not statically reachable (under {via:?})")]
    NotReachable {
        /// Where.
        at: String,
        /// The first keyword on the way that is not `properties`.
        via: String,
    },
    /// The annotated property has `"type": "number"`.
    #[error("x-mcp-header {name:?} at {at:?} is on a number property")]
    NumberType {
        /// Where.
        at: String,
        /// The annotation.
        name: String,
    },
    /// The annotated property has a non-primitive type (`object`, `array`, `null`, or an
    /// unknown name).
    #[error("x-mcp-header {name:?} at {at:?} is on a property of type {ty:?}")]
    NonPrimitiveType {
        /// Where.
        at: String,
        /// The annotation.
        name: String,
        /// The declared type.
        ty: String,
    },
    /// The annotated property declares no `type`.
    #[error("x-mcp-header {name:?} at {at:?} is on a property without a type")]
    MissingType {
        /// Where.
        at: String,
        /// The annotation.
        name: String,
    },
    /// The annotated property's `type` is not a single type name (an array such as
    /// `["string", "null"]`, or not a string).
    #[error("x-mcp-header {name:?} at {at:?} is on a property whose type is not a single name")]
    TypeNotSingle {
        /// Where.
        at: String,
        /// The annotation.
        name: String,
    },
    /// The tool declares more than [`MAX_PARAM_HEADERS`] annotations.
    #[error("more than {limit} x-mcp-header annotations")]
    TooMany {
        /// The limit in force.
        limit: usize,
    },
    /// The schema nests deeper than [`MAX_SCHEMA_DEPTH`] levels: its annotations were not
    /// checked.
    #[error("inputSchema nested deeper than {limit} levels")]
    TooDeep {
        /// The limit in force.
        limit: usize,
    },
    /// Two annotations are equal ignoring case.
    #[error("x-mcp-header {name:?} at {at:?} duplicates {other:?}")]
    Duplicate {
        /// Where (the later of the two).
        at: String,
        /// The annotation.
        name: String,
        /// The earlier annotation it collides with.
        other: String,
    },
}

/// One step on the way from the root to a schema node.
struct Crumb<'a> {
    parent: Option<usize>,
    token: Token<'a>,
    /// The step is a property name inside `properties`.
    property: bool,
}

/// A JSON Pointer reference token.
enum Token<'a> {
    Key(&'a str),
    Index(usize),
}

/// The JSON Pointer (RFC 6901) of crumb `at` (the empty string for the root).
fn pointer(crumbs: &[Crumb<'_>], at: Option<usize>) -> String {
    let mut tokens = Vec::new();
    let mut cur = at;
    while let Some(i) = cur {
        tokens.push(&crumbs[i].token);
        cur = crumbs[i].parent;
    }
    let mut s = String::new();
    for token in tokens.into_iter().rev() {
        s.push('/');
        match token {
            Token::Key(k) => {
                for c in k.chars() {
                    match c {
                        '~' => s.push_str("~0"),
                        '/' => s.push_str("~1"),
                        c => s.push(c),
                    }
                }
            }
            Token::Index(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

/// The property names on the way to crumb `at`.
fn property_path(crumbs: &[Crumb<'_>], at: Option<usize>) -> Vec<String> {
    let mut path = Vec::new();
    let mut cur = at;
    while let Some(i) = cur {
        if let (true, Token::Key(k)) = (crumbs[i].property, &crumbs[i].token) {
            path.push((*k).to_owned());
        }
        cur = crumbs[i].parent;
    }
    path.reverse();
    path
}

/// True when `name` is a valid `x-mcp-header` value: a non-empty RFC 9110 token.
#[must_use]
pub fn is_valid_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_tchar)
}

/// Checks every `x-mcp-header` annotation of a tool's `inputSchema` and returns the
/// declarations, or the first reason the tool is invalid (see the module docs). A schema
/// that is not an object has no annotations.
pub fn tool_param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    declarations(pruned::prune(input_schema))
}

/// A tool of a listing, as JSON text: its name and its declarations (or why it is
/// invalid). `None` when it has no string `name`.
pub(crate) fn tool_declarations(
    raw_tool: &str,
) -> Option<(String, Result<Vec<ParamHeader>, InvalidAnnotation>)> {
    let (name, schema) = pruned::prune_tool(raw_tool)?;
    Some((name, declarations(schema)))
}

fn declarations(
    schema: Result<Option<Node>, Unread>,
) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    match schema {
        Ok(Some(root @ Node::Object(_))) => walk(&root),
        Err(Unread::TooDeep) => Err(InvalidAnnotation::TooDeep {
            limit: MAX_SCHEMA_DEPTH,
        }),
        // Not an object, nothing annotated, or not JSON at all.
        _ => Ok(Vec::new()),
    }
}

/// The declarations of a pruned schema, in pre-order.
fn walk(input_schema: &Node) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    let mut out: Vec<ParamHeader> = Vec::new();
    let mut crumbs: Vec<Crumb<'_>> = Vec::new();
    // Names declared so far, lower-cased, with their index in `out` (at most
    // MAX_PARAM_HEADERS of them).
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    // (node, its crumb, the first keyword on the way that is not `properties`), walked
    // in pre-order thanks to reversed pushes.
    let mut stack: Vec<(&Node, Option<usize>, Option<&str>)> = vec![(input_schema, None, None)];
    let mut children = Vec::new();
    while let Some((node, at, via)) = stack.pop() {
        let members = match node {
            Node::Object(members) => members,
            Node::Array(items) => {
                for (i, item) in items {
                    let c = step(&mut crumbs, at, Token::Index(*i), false);
                    children.push((item, c, via));
                }
                stack.extend(children.drain(..).rev());
                continue;
            }
            _ => continue,
        };
        if let Some(annotation) = Node::member(members, X_MCP_HEADER) {
            if out.len() == MAX_PARAM_HEADERS {
                return Err(InvalidAnnotation::TooMany {
                    limit: MAX_PARAM_HEADERS,
                });
            }
            let found = check_annotation(members, annotation, at, via, &crumbs)?;
            if let Some(&earlier) = seen.get(&found.name.to_ascii_lowercase()) {
                return Err(InvalidAnnotation::Duplicate {
                    at: pointer(&crumbs, at),
                    name: found.name,
                    other: out[earlier].name.clone(),
                });
            }
            seen.insert(found.name.to_ascii_lowercase(), out.len());
            out.push(found);
        }
        for (key, value) in members {
            if key == X_MCP_HEADER {
                continue;
            }
            let here = step(&mut crumbs, at, Token::Key(key), false);
            let keyword_via = via.or(Some(key.as_str()));
            match value {
                Node::Object(map) if key == "properties" => {
                    for (name, schema) in map {
                        let c = step(&mut crumbs, here, Token::Key(name), via.is_none());
                        children.push((schema, c, via));
                    }
                }
                Node::Object(map) if SCHEMA_MAP_KEYWORDS.contains(&key.as_str()) => {
                    for (name, schema) in map {
                        let c = step(&mut crumbs, here, Token::Key(name), false);
                        children.push((schema, c, keyword_via));
                    }
                }
                v => children.push((v, here, keyword_via)),
            }
        }
        stack.extend(children.drain(..).rev());
    }
    Ok(out)
}

/// Records one step and returns its index.
fn step<'a>(
    crumbs: &mut Vec<Crumb<'a>>,
    parent: Option<usize>,
    token: Token<'a>,
    property: bool,
) -> Option<usize> {
    crumbs.push(Crumb {
        parent,
        token,
        property,
    });
    Some(crumbs.len() - 1)
}

/// Validates the annotation found on `obj`.
fn check_annotation(
    members: &[(String, Node)],
    annotation: &Node,
    at: Option<usize>,
    via: Option<&str>,
    crumbs: &[Crumb<'_>],
) -> Result<ParamHeader, InvalidAnnotation> {
    let at_owned = || pointer(crumbs, at);
    let Node::Text(name) = annotation else {
        return Err(InvalidAnnotation::NotAString { at: at_owned() });
    };
    if name.is_empty() {
        return Err(InvalidAnnotation::Empty { at: at_owned() });
    }
    if name.len() > MAX_HEADER_NAME_BYTES {
        return Err(InvalidAnnotation::TooLong {
            at: at_owned(),
            limit: MAX_HEADER_NAME_BYTES,
        });
    }
    if !is_valid_header_name(name) {
        return Err(InvalidAnnotation::NotAToken {
            at: at_owned(),
            name: name.clone(),
        });
    }
    if let Some(k) = via {
        return Err(InvalidAnnotation::NotReachable {
            at: at_owned(),
            via: k.to_owned(),
        });
    }
    if at.is_none() {
        return Err(InvalidAnnotation::OnRoot);
    }
    let kind = match Node::member(members, "type") {
        None => {
            return Err(InvalidAnnotation::MissingType {
                at: at_owned(),
                name: name.clone(),
            });
        }
        Some(Node::Text(t)) => match t.as_str() {
            "string" => Primitive::String,
            "integer" => Primitive::Integer,
            "boolean" => Primitive::Boolean,
            "number" => {
                return Err(InvalidAnnotation::NumberType {
                    at: at_owned(),
                    name: name.clone(),
                });
            }
            other => {
                return Err(InvalidAnnotation::NonPrimitiveType {
                    at: at_owned(),
                    name: name.clone(),
                    ty: other.to_owned(),
                });
            }
        },
        Some(_) => {
            return Err(InvalidAnnotation::TypeNotSingle {
                at: at_owned(),
                name: name.clone(),
            });
        }
    };
    Ok(ParamHeader {
        name: name.clone(),
        path: property_path(crumbs, at),
        kind,
    })
}

/// The `Mcp-Param-*` headers for a call: for each declaration whose value in
/// `arguments` is present and not null, (`Mcp-Param-{name}`, encoded value). Absent and
/// null values are omitted. Fails when a value cannot be sent (wrong JSON type, an
/// integer out of range); the call should then fail locally.
pub fn extract_param_values(
    headers: &[ParamHeader],
    arguments: &Value,
) -> Result<Vec<(String, String)>, HeaderError> {
    let mut out = Vec::with_capacity(headers.len());
    for declared in headers {
        let value = declared
            .path
            .iter()
            .try_fold(arguments, |v, step| v.get(step.as_str()));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        let name = declared.header_name();
        let text = primitive_text(declared.kind, value, &name)?;
        out.push((name, encode_header_value(&text)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    #[test]
    fn nested_and_data_keywords() {
        let schema = json!({
            "type": "object",
            "properties": {
                "x-mcp-header": {"type": "string"},
                "a": {"type": "object", "default": {"x-mcp-header": "Nope"},
                      "properties": {"b/c": {"type": "integer", "x-mcp-header": "B"}}}
            }
        });
        let got = tool_param_headers(&schema).unwrap();
        assert_eq!(
            got,
            vec![ParamHeader {
                name: "B".into(),
                path: vec!["a".into(), "b/c".into()],
                kind: Primitive::Integer
            }]
        );
        let args = json!({"a": {"b/c": 42.0}});
        assert_eq!(
            extract_param_values(&got, &args).unwrap(),
            vec![("Mcp-Param-B".into(), "42".into())]
        );
    }

    #[test]
    fn reasons() {
        let under = |kw: &str| json!({"type": "object", "properties": {"p": {"type": "array", kw: [{"type": "string", "x-mcp-header": "X"}]}}});
        assert_eq!(
            tool_param_headers(&under("prefixItems")),
            Err(InvalidAnnotation::NotReachable {
                at: "/properties/p/prefixItems/0".into(),
                via: "prefixItems".into()
            })
        );
        let dup = json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "R"}, "b": {"type": "boolean", "x-mcp-header": "r"}}});
        assert!(matches!(
            tool_param_headers(&dup),
            Err(InvalidAnnotation::Duplicate { .. })
        ));
    }

    fn annotated(n: usize, last: &str) -> Value {
        let mut props = Map::new();
        for i in 0..n {
            props.insert(
                format!("p{i}"),
                json!({"type": "string", "x-mcp-header": format!("H{i}")}),
            );
        }
        props.insert(
            "zz".to_owned(),
            json!({"type": "string", "x-mcp-header": last}),
        );
        json!({"type": "object", "properties": Value::Object(props)})
    }

    #[test]
    fn a_tool_declares_at_most_max_param_headers() {
        let at_limit = annotated(MAX_PARAM_HEADERS - 1, "Last");
        assert_eq!(
            tool_param_headers(&at_limit).unwrap().len(),
            MAX_PARAM_HEADERS
        );
        let over = annotated(MAX_PARAM_HEADERS, "Last");
        assert_eq!(
            tool_param_headers(&over),
            Err(InvalidAnnotation::TooMany {
                limit: MAX_PARAM_HEADERS
            })
        );
        // However large the schema, the walk stops at the limit: 100 000 annotations
        // cost no more than 65.
        assert!(matches!(
            tool_param_headers(&annotated(100_000, "Last")),
            Err(InvalidAnnotation::TooMany { .. })
        ));
    }

    #[test]
    fn an_annotation_is_at_most_max_header_name_bytes_long() {
        let at_limit = annotated(0, &"A".repeat(MAX_HEADER_NAME_BYTES));
        assert_eq!(tool_param_headers(&at_limit).unwrap().len(), 1);
        let over = annotated(0, &"A".repeat(MAX_HEADER_NAME_BYTES + 1));
        assert_eq!(
            tool_param_headers(&over),
            Err(InvalidAnnotation::TooLong {
                at: "/properties/zz".into(),
                limit: MAX_HEADER_NAME_BYTES
            })
        );
    }

    #[test]
    fn duplicates_are_found_whatever_the_case_and_name_both() {
        let dup = annotated(10, "h3");
        let Err(InvalidAnnotation::Duplicate { name, other, .. }) = tool_param_headers(&dup) else {
            panic!("expected a duplicate")
        };
        assert_eq!((name.as_str(), other.as_str()), ("h3", "H3"));
    }

    #[test]
    fn unannotated_schemas_declare_nothing() {
        let plain = json!({"type": "object", "properties": {"text": {"type": "string"}},
                           "required": ["text"], "items": [{"enum": ["x-mcp-header"]}]});
        assert_eq!(tool_param_headers(&plain), Ok(Vec::new()));
        let only_data = json!({"type": "object", "default": {"x-mcp-header": "Nope"}});
        assert_eq!(tool_param_headers(&only_data), Ok(Vec::new()));
    }

    /// A schema `levels` properties deep (two containers per level) with an annotated
    /// string at the bottom.
    fn nested(levels: usize) -> Value {
        let mut v = json!({"type": "string", "x-mcp-header": "Deep"});
        for _ in 0..levels {
            // Built by hand: `json!` would re-serialise `v` recursively.
            let mut props = Map::new();
            props.insert("n".to_owned(), v);
            let mut obj = Map::new();
            obj.insert("type".to_owned(), json!("object"));
            obj.insert("properties".to_owned(), Value::Object(props));
            v = Value::Object(obj);
        }
        v
    }

    #[test]
    fn a_deep_schema_is_refused_without_overflowing() {
        let fits = nested(MAX_SCHEMA_DEPTH / 2 - 1);
        assert_eq!(
            tool_param_headers(&fits).unwrap()[0].path.len(),
            MAX_SCHEMA_DEPTH / 2 - 1
        );
        let tool = json!({"name": "t", "inputSchema": fits}).to_string();
        assert_eq!(tool_declarations(&tool).unwrap().1.unwrap().len(), 1);
        let too_deep = Err(InvalidAnnotation::TooDeep {
            limit: MAX_SCHEMA_DEPTH,
        });
        assert_eq!(tool_param_headers(&nested(MAX_SCHEMA_DEPTH / 2)), too_deep);
        // Deeper than serde_json reads text: still this error, with the tool's name
        // (given after its schema).
        let deep = nested(1000);
        let text = format!(r#"{{"inputSchema":{deep},"name":"t"}}"#);
        assert_eq!(
            tool_declarations(&text),
            Some(("t".to_owned(), too_deep.clone()))
        );
        let v = nested(100_000);
        assert_eq!(tool_param_headers(&v), too_deep);
        // Dropping a deeply nested Value recurses inside serde_json; leak it instead.
        std::mem::forget(v);
    }

    #[test]
    fn a_tool_read_as_text_keeps_only_what_bears_on_its_annotations() {
        let junk = vec![0; 100_000];
        let objects = vec![json!({}); 10_000];
        let many = vec!["x"; 1000];
        let tool = json!({"name": "big", "description": "x".repeat(10_000), "inputSchema": {
        "type": "object", "junk": junk, "objects": objects, "required": ["a"],
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A", "enum": many},
            "b": {"type": "integer", "description": "plain"},
            "enum": {"type": "boolean", "x-mcp-header": "E"},
            "list": {"type": "array", "items": [0, 1, {"type": "string", "x-mcp-header": "I"}]}
        }}})
        .to_string();
        let (name, schema) = pruned::prune_tool(&tool).unwrap();
        assert_eq!(name, "big");
        let root = schema.unwrap().unwrap();
        // root, properties, a (+ its annotation and type), enum (+ 2), list, items, the
        // third item (+ 2).
        assert_eq!(root.count(), 13, "{root:?}");
        let Err(InvalidAnnotation::NotReachable { at, via }) = declarations(Ok(Some(root))) else {
            panic!("the annotation under items is not reachable");
        };
        assert_eq!(
            (at.as_str(), via.as_str()),
            ("/properties/list/items/2", "items")
        );
    }

    #[test]
    fn text_and_value_give_the_same_declarations() {
        let schemas = [
            json!({"type": "object", "properties": {
                "z": {"type": "string", "x-mcp-header": "Z"},
                "a": {"type": "object", "properties": {"b": {"type": "boolean", "x-mcp-header": "B"}}},
                "type": {"type": "integer", "x-mcp-header": "T"},
                "default": {"type": "string", "x-mcp-header": "D"}}}),
            json!({"type": "object", "properties": {"p": {"type": ["string", "null"], "x-mcp-header": "P"}}}),
            json!({"type": "object", "properties": {"p": {"type": {"x-mcp-header": "Q"}, "x-mcp-header": "P"}}}),
            json!({"type": "object", "properties": {"p": {"type": "string", "x-mcp-header": 7}}}),
            json!({"type": "object", "properties": {"p": {"x-mcp-header": "P"}}}),
            json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
            json!([{"type": "string", "x-mcp-header": "A"}]),
            annotated(70, "Last"),
        ];
        for schema in schemas {
            let tool = json!({"name": "t", "inputSchema": schema}).to_string();
            let (_, from_text) = tool_declarations(&tool).unwrap();
            assert_eq!(from_text, tool_param_headers(&schema), "{schema}");
        }
        assert_eq!(
            tool_param_headers(&json!({"type": "object", "properties": {
                "z": {"type": "string", "x-mcp-header": "Z"},
                "a": {"type": "object", "properties": {"b": {"type": "boolean", "x-mcp-header": "B"}}},
                "type": {"type": "integer", "x-mcp-header": "T"},
                "default": {"type": "string", "x-mcp-header": "D"}}}))
            .unwrap()
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>(),
            ["B", "D", "T", "Z"],
            "pre-order, keys sorted; properties named like keywords are properties"
        );
    }

    #[test]
    fn of_repeated_keys_the_last_counts_as_in_a_value() {
        let text = r#"{"name":"t","inputSchema":{"type":"object","properties":{
            "a":{"type":"string","x-mcp-header":"A"},"a":{"type":"string"},
            "b":{"type":"string"},"b":{"type":"integer","x-mcp-header":"B"}}}}"#;
        let (_, declared) = tool_declarations(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(declared, tool_param_headers(&value["inputSchema"]));
        assert_eq!(
            declared.unwrap(),
            [ParamHeader {
                name: "B".into(),
                path: vec!["b".into()],
                kind: Primitive::Integer
            }]
        );
    }

    #[test]
    fn a_tool_without_a_string_name_is_not_read() {
        assert_eq!(tool_declarations(r#"{"name":3,"inputSchema":{}}"#), None);
        assert_eq!(tool_declarations(r#"{"inputSchema":{}}"#), None);
        assert_eq!(tool_declarations("[]"), None);
    }
}
