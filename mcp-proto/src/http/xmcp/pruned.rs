//! A schema read for its annotations only.
//!
//! A tool's `inputSchema` comes from the server and may be as large as a message. Read
//! into a `serde_json::Value`, every number, string and empty object of it costs tens of
//! bytes: 8 MiB of `[0,0,…]` became about 150 MiB. The walk in the parent module needs
//! far less: the objects and arrays with an annotation somewhere below them, each
//! `x-mcp-header` value, and the `type` beside it. [`prune`] reads a schema (from text
//! or from a `Value`, through serde) keeping only that, so what a schema costs is about
//! what its annotations take as text. Instance data (`const`, `default`, `enum`,
//! `examples`) is skipped unread, as the walk skips it.
//!
//! Object members come out sorted by key, and of members with the same key the last one
//! counts, as in a `serde_json::Map`: the walk sees the same schema whether it came as
//! text or as a value.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{DATA_KEYWORDS, SCHEMA_MAP_KEYWORDS, X_MCP_HEADER};

/// Deepest nesting of a schema that is read: past it the tool's annotations cannot be
/// checked ([`super::InvalidAnnotation::TooDeep`]). Below `serde_json`'s own limit for
/// text, so that a deep schema is always this typed error.
pub const MAX_SCHEMA_DEPTH: usize = 100;

/// What of a schema can bear on its annotations.
#[derive(Debug, PartialEq)]
pub(super) enum Node {
    /// An object: the members that matter, sorted by key.
    Object(Vec<(String, Node)>),
    /// An array: the items that matter, with their index.
    Array(Vec<(usize, Node)>),
    /// A string, kept as the value of `x-mcp-header` or `type`.
    Text(String),
    /// Any other value, kept as the value of `x-mcp-header` or `type`.
    Other,
}

impl Node {
    /// The member `key` of an object.
    pub(super) fn member<'a>(members: &'a [(String, Node)], key: &str) -> Option<&'a Node> {
        members
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| &members[i].1)
    }

    /// How many nodes this one holds, itself included.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        1 + match self {
            Node::Object(m) => m.iter().map(|(_, n)| n.count()).sum(),
            Node::Array(items) => items.iter().map(|(_, n)| n.count()).sum(),
            _ => 0,
        }
    }
}

/// Why a schema was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unread {
    /// It nests deeper than [`MAX_SCHEMA_DEPTH`].
    TooDeep,
    /// It is not JSON this reading accepts.
    Malformed,
}

/// Reads a schema, keeping what can bear on its annotations (`None`: nothing does).
pub(super) fn prune<'de, D: Deserializer<'de>>(input: D) -> Result<Option<Node>, Unread> {
    let too_deep = Cell::new(false);
    let seed = Seed {
        place: Place::Schema,
        depth: 0,
        too_deep: &too_deep,
    };
    seed.deserialize(input)
        .map_err(|_: D::Error| unread(&too_deep))
}

/// A tool read for its name and its schema's annotations: `None` when it has no string
/// `name`; the schema is [`Unread::TooDeep`] when it nests too deeply.
pub(super) fn prune_tool(raw: &str) -> Option<(String, Result<Option<Node>, Unread>)> {
    let too_deep = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(raw);
    match (ToolSeed(&too_deep)).deserialize(&mut de) {
        Ok((Some(name), schema)) => Some((name, Ok(schema))),
        Ok((None, _)) => None,
        Err(_) if too_deep.get() => {
            // The name may come after the schema: read it alone.
            let mut de = serde_json::Deserializer::from_str(raw);
            let name = Name { whole_tool: true }
                .deserialize(&mut de)
                .ok()
                .flatten()?;
            Some((name, Err(Unread::TooDeep)))
        }
        Err(_) => None,
    }
}

fn unread(too_deep: &Cell<bool>) -> Unread {
    if too_deep.get() {
        Unread::TooDeep
    } else {
        Unread::Malformed
    }
}

/// Where a value sits, which decides what of it matters.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// A schema: objects are schemas, arrays hold schemas.
    Schema,
    /// The value of `properties` or of a keyword mapping names to schemas: an object's
    /// members are schemas whatever their names.
    Members,
    /// The value of `type`: kept (a string as text, anything else as `Other`) and, when a
    /// container, read as a schema too.
    Type,
    /// The value of `x-mcp-header`: kept as text or `Other`, never read further.
    Annotation,
}

struct Seed<'a> {
    place: Place,
    depth: usize,
    too_deep: &'a Cell<bool>,
}

impl Seed<'_> {
    fn child(&self, place: Place) -> Self {
        Seed {
            place,
            depth: self.depth + 1,
            too_deep: self.too_deep,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Option<Node>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Option<Node>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(match self.place {
            Place::Type | Place::Annotation => Some(Node::Text(v.to_owned())),
            _ => None,
        })
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(match self.place {
            Place::Type | Place::Annotation => Some(Node::Text(v)),
            _ => None,
        })
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.scalar())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        if self.place == Place::Annotation {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(Some(Node::Other));
        }
        self.enter()?;
        let mut items = Vec::new();
        let mut index = 0;
        while let Some(item) = seq.next_element_seed(self.child(Place::Schema))? {
            if let Some(node) = item {
                items.push((index, node));
            }
            index += 1;
        }
        Ok(self.container(if items.is_empty() {
            None
        } else {
            Some(Node::Array(items))
        }))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if self.place == Place::Annotation {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Some(Node::Other));
        }
        self.enter()?;
        let schema = self.place != Place::Members;
        // Members kept, by key: a later member with the same key replaces the earlier
        // one, even one that is not kept (a `serde_json::Map` keeps the last).
        let mut kept: Vec<(String, Option<Node>)> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let node = if !schema {
                map.next_value_seed(self.child(Place::Schema))?
            } else if key == X_MCP_HEADER {
                map.next_value_seed(self.child(Place::Annotation))?
            } else if DATA_KEYWORDS.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
                None
            } else if key == "type" {
                map.next_value_seed(self.child(Place::Type))?
            } else if key == "properties" || SCHEMA_MAP_KEYWORDS.contains(&key.as_str()) {
                map.next_value_seed(self.child(Place::Members))?
            } else {
                map.next_value_seed(self.child(Place::Schema))?
            };
            match (index.get(&key), node) {
                (Some(&i), node) => kept[i].1 = node,
                (None, Some(node)) => {
                    index.insert(key.clone(), kept.len());
                    kept.push((key, Some(node)));
                }
                (None, None) => {}
            }
        }
        let annotated = schema && index.contains_key(X_MCP_HEADER);
        let mut members: Vec<(String, Node)> = kept
            .into_iter()
            .filter_map(|(k, n)| Some((k, n?)))
            // A type matters only beside an annotation (or for what is inside it).
            .filter(|(k, n)| {
                !schema || annotated || k != "type" || matches!(n, Node::Object(_) | Node::Array(_))
            })
            .collect();
        if members.is_empty() {
            return Ok(self.container(None));
        }
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(Node::Object(members)))
    }
}

impl Seed<'_> {
    /// A number, a boolean or null.
    fn scalar(&self) -> Option<Node> {
        match self.place {
            Place::Type | Place::Annotation => Some(Node::Other),
            _ => None,
        }
    }

    /// A container that kept nothing is still a value for `type`.
    fn container(&self, node: Option<Node>) -> Option<Node> {
        match (node, self.place) {
            (None, Place::Type) => Some(Node::Other),
            (node, _) => node,
        }
    }

    fn enter<E: de::Error>(&self) -> Result<(), E> {
        if self.depth >= MAX_SCHEMA_DEPTH {
            self.too_deep.set(true);
            return Err(E::custom("schema nested too deeply"));
        }
        Ok(())
    }
}

/// A tool object: its `name` (when a string) and its `inputSchema`, pruned.
struct ToolSeed<'a>(&'a Cell<bool>);

impl<'de> DeserializeSeed<'de> for ToolSeed<'_> {
    type Value = (Option<String>, Option<Node>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ToolSeed<'_> {
    type Value = (Option<String>, Option<Node>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut schema) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => name = map.next_value_seed(Name { whole_tool: false })?,
                "inputSchema" => {
                    schema = map.next_value_seed(Seed {
                        place: Place::Schema,
                        depth: 0,
                        too_deep: self.0,
                    })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((name, schema))
    }
}

/// A tool's name: the text of a string, `None` for any other value. Read over the whole
/// tool (`whole_tool`, when only its name is wanted), it is that object's `name` member
/// read the same way; read over a `name` member's value, an object there is not looked
/// into (a tool so named has no name, as the typed view of the listing reads it).
struct Name {
    whole_tool: bool,
}

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name = None;
        while let Some(key) = map.next_key::<String>()? {
            if self.whole_tool && key == "name" {
                name = map.next_value_seed(Name { whole_tool: false })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(name)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}
