//! The form schemas of elicitation: the supported subset of JSON Schema, checked before
//! anyone is asked, and the answers checked against it (defaults applied).
//!
//! The subset (MCP's `PrimitiveSchemaDefinition`): a flat `{"type": "object",
//! "properties": {…}, "required": […]}` whose properties are
//!
//! * `string` with `minLength`, `maxLength`, `format` (`email`, `uri`, `date`,
//!   `date-time`), `default`, and as a single-select enum `enum` (with the legacy
//!   `enumNames`) or `oneOf` of `{const, title}`;
//! * `number` or `integer` with `minimum`, `maximum`, `default`;
//! * `boolean` with `default`;
//! * `array` of strings from an enum (`items.enum` or `items.anyOf` of `{const, title}`)
//!   with `minItems`, `maxItems`, `default`.
//!
//! Annotations (`title`, `description`, …) are ignored. A validation keyword the subset
//! does not have (`pattern`, `$ref`, `allOf`, `exclusiveMinimum`, …) makes the schema
//! unsupported: a client that cannot enforce a constraint does not pretend to. Every
//! check is linear in the size of the schema and of the answer.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// Most properties a form may have.
pub const MAX_FORM_FIELDS: usize = 256;

/// Largest requested schema read, as JSON text: a form of [`MAX_FORM_FIELDS`] fields with
/// titles, descriptions and choices fits many times over, and a schema is read into
/// values costing tens of bytes per choice, so a larger one is refused unread.
pub const MAX_FORM_SCHEMA_BYTES: usize = 256 * 1024;

/// Why a schema is not in the subset, or an answer does not satisfy it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormError(String);

impl FormError {
    fn new(text: impl Into<String>) -> Self {
        let mut text = text.into();
        super::event::clip(&mut text);
        FormError(text)
    }
}

/// Validation keywords outside the subset: their presence makes a schema unsupported.
const UNSUPPORTED: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "pattern",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "dependentRequired",
    "dependentSchemas",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "contains",
    "prefixItems",
    "minProperties",
    "maxProperties",
    "propertyNames",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Email,
    Uri,
    Date,
    DateTime,
}

#[derive(Debug, Clone)]
enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
        format: Option<Format>,
        options: Option<BTreeSet<String>>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    Choices {
        options: BTreeSet<String>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

#[derive(Debug, Clone)]
struct Field {
    name: String,
    required: bool,
    kind: Kind,
    default: Option<Value>,
}

/// A form schema in the supported subset (see the module docs).
///
/// ```
/// use mcp_proto::client::FormSchema;
/// use serde_json::json;
///
/// let schema = FormSchema::parse(&json!({"type": "object",
///     "properties": {"name": {"type": "string", "minLength": 1},
///                    "n": {"type": "integer", "default": 3}},
///     "required": ["name"]})).unwrap();
/// let answer = schema.check(json!({"name": "ada"}).as_object().unwrap().clone()).unwrap();
/// assert_eq!(answer["n"], 3, "defaults applied");
/// assert!(schema.check(json!({"name": ""}).as_object().unwrap().clone()).is_err());
/// assert!(FormSchema::parse(&json!({"type": "object",
///     "properties": {"p": {"type": "string", "pattern": "^a"}}})).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct FormSchema {
    fields: Vec<Field>,
    index: BTreeMap<String, usize>,
}

impl FormSchema {
    /// Checks `schema` against the subset.
    ///
    /// # Errors
    /// [`FormError`] naming what is outside the subset.
    pub fn parse(schema: &Value) -> Result<FormSchema, FormError> {
        let top = schema
            .as_object()
            .ok_or_else(|| FormError::new("the requested schema is not an object"))?;
        unsupported_keywords(top, "the requested schema")?;
        if top.get("type").and_then(Value::as_str) != Some("object") {
            return Err(FormError::new("the requested schema is not of type object"));
        }
        for keyword in ["anyOf", "oneOf", "items", "enum", "const"] {
            if top.contains_key(keyword) {
                return Err(FormError::new(format!(
                    "`{keyword}` at the top of a form schema"
                )));
            }
        }
        let empty = Map::new();
        let props = match top.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(FormError::new("`properties` is not an object")),
        };
        if props.len() > MAX_FORM_FIELDS {
            return Err(FormError::new(format!(
                "{} properties (at most {MAX_FORM_FIELDS})",
                props.len()
            )));
        }
        let mut required = BTreeSet::new();
        match top.get("required") {
            None => {}
            Some(Value::Array(names)) => {
                for n in names {
                    let n = n
                        .as_str()
                        .ok_or_else(|| FormError::new("`required` holds a non-string"))?;
                    if !props.contains_key(n) {
                        return Err(FormError::new(format!(
                            "`required` names {n:?}, which is not a property"
                        )));
                    }
                    required.insert(n);
                }
            }
            Some(_) => return Err(FormError::new("`required` is not an array")),
        }
        let mut fields = Vec::with_capacity(props.len());
        let mut index = BTreeMap::new();
        for (name, prop) in props {
            let field = parse_field(name, prop, required.contains(name.as_str()))?;
            index.insert(name.clone(), fields.len());
            fields.push(field);
        }
        Ok(FormSchema { fields, index })
    }

    /// Checks a form answer (the `content` of an accept): every value has its field's
    /// type and constraints, every required field is there, no other field is; missing
    /// fields with a `default` get it. Returns the content to send.
    ///
    /// # Errors
    /// [`FormError`] naming the first field that does not pass.
    pub fn check(&self, mut content: Map<String, Value>) -> Result<Map<String, Value>, FormError> {
        for name in content.keys() {
            if !self.index.contains_key(name) {
                return Err(FormError::new(format!(
                    "{name:?} is not a field of the form"
                )));
            }
        }
        for field in &self.fields {
            match content.get(&field.name) {
                Some(v) => check_value(field, v)?,
                None => match &field.default {
                    Some(d) => {
                        content.insert(field.name.clone(), d.clone());
                    }
                    None if field.required => {
                        return Err(FormError::new(format!("{:?} is required", field.name)));
                    }
                    None => {}
                },
            }
        }
        Ok(content)
    }

    /// The names of the fields, in the schema's order.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| f.name.as_str())
    }
}

fn unsupported_keywords(schema: &Map<String, Value>, what: &str) -> Result<(), FormError> {
    match UNSUPPORTED.iter().find(|k| schema.contains_key(**k)) {
        Some(k) => Err(FormError::new(format!(
            "{what} uses `{k}`, which this client does not support"
        ))),
        None => Ok(()),
    }
}

fn count(prop: &Map<String, Value>, key: &str, name: &str) -> Result<Option<u64>, FormError> {
    match prop.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| FormError::new(format!("{name:?}: `{key}` is not a count"))),
    }
}

fn bound(prop: &Map<String, Value>, key: &str, name: &str) -> Result<Option<f64>, FormError> {
    match prop.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| FormError::new(format!("{name:?}: `{key}` is not a number"))),
    }
}

/// The values of a `oneOf`/`anyOf` of `{const, title}`.
fn consts(list: &Value, name: &str) -> Result<BTreeSet<String>, FormError> {
    let list = list
        .as_array()
        .ok_or_else(|| FormError::new(format!("{name:?}: options are not an array")))?;
    let mut out = BTreeSet::new();
    for option in list {
        let value = option
            .get("const")
            .and_then(Value::as_str)
            .ok_or_else(|| FormError::new(format!("{name:?}: an option has no string `const`")))?;
        out.insert(value.to_owned());
    }
    Ok(out)
}

fn strings(list: &Value, name: &str) -> Result<BTreeSet<String>, FormError> {
    let list = list
        .as_array()
        .ok_or_else(|| FormError::new(format!("{name:?}: `enum` is not an array")))?;
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| FormError::new(format!("{name:?}: `enum` holds a non-string")))
        })
        .collect()
}

fn parse_field(name: &str, prop: &Value, required: bool) -> Result<Field, FormError> {
    let prop = prop
        .as_object()
        .ok_or_else(|| FormError::new(format!("{name:?} is not a schema object")))?;
    unsupported_keywords(prop, &format!("{name:?}"))?;
    if prop.contains_key("properties") {
        return Err(FormError::new(format!(
            "{name:?}: nested objects are not supported"
        )));
    }
    let ty = prop.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = match ty {
        "string" => {
            if prop.contains_key("anyOf") || prop.contains_key("items") {
                return Err(FormError::new(format!(
                    "{name:?}: `anyOf`/`items` on a string"
                )));
            }
            let format = match prop.get("format").map(|f| f.as_str()) {
                None => None,
                Some(Some("email")) => Some(Format::Email),
                Some(Some("uri")) => Some(Format::Uri),
                Some(Some("date")) => Some(Format::Date),
                Some(Some("date-time")) => Some(Format::DateTime),
                Some(other) => {
                    return Err(FormError::new(format!(
                        "{name:?}: unsupported format {:?}",
                        other.unwrap_or("(not a string)")
                    )));
                }
            };
            let options = match (prop.get("enum"), prop.get("oneOf")) {
                (Some(_), Some(_)) => {
                    return Err(FormError::new(format!("{name:?}: both `enum` and `oneOf`")));
                }
                (Some(e), None) => {
                    let options = strings(e, name)?;
                    if let Some(names) = prop.get("enumNames") {
                        let len = names.as_array().map(Vec::len);
                        if len != e.as_array().map(Vec::len) {
                            return Err(FormError::new(format!(
                                "{name:?}: `enumNames` does not match `enum`"
                            )));
                        }
                    }
                    Some(options)
                }
                (None, Some(one_of)) => Some(consts(one_of, name)?),
                (None, None) => None,
            };
            Kind::Text {
                min: count(prop, "minLength", name)?,
                max: count(prop, "maxLength", name)?,
                format,
                options,
            }
        }
        "number" | "integer" => Kind::Number {
            integer: ty == "integer",
            min: bound(prop, "minimum", name)?,
            max: bound(prop, "maximum", name)?,
        },
        "boolean" => Kind::Boolean,
        "array" => {
            let items = prop
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| FormError::new(format!("{name:?}: an array without `items`")))?;
            unsupported_keywords(items, &format!("{name:?}.items"))?;
            let options = match (items.get("enum"), items.get("anyOf")) {
                (Some(e), None) if items.get("type").and_then(Value::as_str) == Some("string") => {
                    strings(e, name)?
                }
                (None, Some(any_of)) => consts(any_of, name)?,
                _ => {
                    return Err(FormError::new(format!(
                        "{name:?}: only arrays of strings from an enum are supported"
                    )));
                }
            };
            Kind::Choices {
                options,
                min: count(prop, "minItems", name)?,
                max: count(prop, "maxItems", name)?,
            }
        }
        "" => return Err(FormError::new(format!("{name:?} has no type"))),
        other => {
            return Err(FormError::new(format!(
                "{name:?}: type {other:?} is not supported in forms"
            )));
        }
    };
    if !matches!(kind, Kind::Choices { .. })
        && (prop.contains_key("minItems") || prop.contains_key("maxItems"))
    {
        return Err(FormError::new(format!(
            "{name:?}: item counts on a non-array"
        )));
    }
    let mut field = Field {
        name: name.to_owned(),
        required,
        kind,
        default: None,
    };
    if let Some(d) = prop.get("default") {
        check_value(&field, d)
            .map_err(|e| FormError::new(format!("the default does not fit: {e}")))?;
        field.default = Some(d.clone());
    }
    Ok(field)
}

fn check_value(field: &Field, value: &Value) -> Result<(), FormError> {
    let name = &field.name;
    let fail = |what: String| Err(FormError::new(format!("{name:?}: {what}")));
    match &field.kind {
        Kind::Text {
            min,
            max,
            format,
            options,
        } => {
            let Some(s) = value.as_str() else {
                return fail("not a string".into());
            };
            let chars = s.chars().count() as u64;
            if min.is_some_and(|m| chars < m) || max.is_some_and(|m| chars > m) {
                return fail(format!("{chars} characters, outside the bounds"));
            }
            if let Some(options) = options
                && !options.contains(s)
            {
                return fail("not one of the options".into());
            }
            if let Some(f) = format
                && !format_ok(*f, s)
            {
                return fail(format!("not a valid {f:?}"));
            }
        }
        Kind::Number { integer, min, max } => {
            let Some(n) = value.as_f64() else {
                return fail("not a number".into());
            };
            if *integer && !(value.is_i64() || value.is_u64() || n.fract() == 0.0) {
                return fail("not an integer".into());
            }
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return fail(format!("{n} is outside the bounds"));
            }
        }
        Kind::Boolean => {
            if !value.is_boolean() {
                return fail("not a boolean".into());
            }
        }
        Kind::Choices { options, min, max } => {
            let Some(list) = value.as_array() else {
                return fail("not an array".into());
            };
            let n = list.len() as u64;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return fail(format!("{n} choices, outside the bounds"));
            }
            let mut seen = BTreeSet::new();
            for v in list {
                let Some(s) = v.as_str() else {
                    return fail("a choice is not a string".into());
                };
                if !options.contains(s) {
                    return fail("a choice is not one of the options".into());
                }
                if !seen.insert(s) {
                    return fail("a choice is repeated".into());
                }
            }
        }
    }
    Ok(())
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn date_ok(s: &str) -> bool {
    let parts: Vec<&str> = s.splitn(4, '-').collect();
    matches!(parts[..], [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2
        && digits(y) && digits(m) && digits(d)
        && (1..=12).contains(&m.parse::<u8>().unwrap_or(0))
        && (1..=31).contains(&d.parse::<u8>().unwrap_or(0)))
}

fn format_ok(format: Format, s: &str) -> bool {
    match format {
        Format::Email => s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@')
        }),
        Format::Uri => s.split_once(':').is_some_and(|(scheme, _)| {
            scheme
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic())
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        }),
        Format::Date => date_ok(s),
        Format::DateTime => s.split_once(['T', 't']).is_some_and(|(date, time)| {
            date_ok(date) && time.len() >= 8 && time.as_bytes()[2] == b':'
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(props: Value) -> Result<FormSchema, FormError> {
        FormSchema::parse(&json!({"type": "object", "properties": props}))
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_subset_is_accepted() {
        let s = FormSchema::parse(&json!({"type": "object", "properties": {
            "s": {"type": "string", "minLength": 1, "maxLength": 5, "format": "email", "title": "S"},
            "e": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
            "o": {"type": "string", "oneOf": [{"const": "x", "title": "X"}, {"const": "y"}]},
            "n": {"type": "number", "minimum": 0.5, "maximum": 2},
            "i": {"type": "integer", "default": 4},
            "b": {"type": "boolean", "default": true},
            "m": {"type": "array", "items": {"type": "string", "enum": ["p", "q"]}, "maxItems": 2},
            "t": {"type": "array", "items": {"anyOf": [{"const": "p"}, {"const": "q"}]}},
        }, "required": ["e"]}))
        .unwrap();
        let out = s
            .check(obj(
                json!({"e": "a", "o": "y", "n": 1.5, "m": ["p", "q"], "s": "a@b"}),
            ))
            .unwrap();
        assert_eq!(out["i"], 4);
        assert_eq!(out["b"], true);
        for bad in [
            json!({}),
            json!({"e": "c"}),
            json!({"e": "a", "o": "z"}),
            json!({"e": "a", "n": 3}),
            json!({"e": "a", "i": 1.5}),
            json!({"e": "a", "m": ["p", "p"]}),
            json!({"e": "a", "m": ["r"]}),
            json!({"e": "a", "s": "nobody"}),
            json!({"e": "a", "s": "toolong@x"}),
            json!({"e": "a", "b": "yes"}),
            json!({"e": "a", "zzz": 1}),
        ] {
            assert!(s.check(obj(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn anything_else_is_unsupported() {
        for props in [
            json!({"p": {"type": "string", "pattern": "^a"}}),
            json!({"p": {"type": "object", "properties": {}}}),
            json!({"p": {"type": "array", "items": {"type": "number"}}}),
            json!({"p": {"type": "string", "format": "hostname"}}),
            json!({"p": {"$ref": "#/x"}}),
            json!({"p": {"type": "string", "default": 3}}),
            json!({"p": {"anyOf": [{"type": "string"}]}}),
            json!({"p": {"type": "integer", "exclusiveMinimum": 0}}),
            json!({"p": true}),
        ] {
            assert!(schema(props.clone()).is_err(), "{props}");
        }
        assert!(FormSchema::parse(&json!({"type": "array"})).is_err());
        assert!(
            FormSchema::parse(&json!({"type": "object", "properties": {}, "required": ["x"]}))
                .is_err()
        );
    }

    #[test]
    fn formats() {
        assert!(format_ok(Format::Date, "2025-11-25"));
        assert!(!format_ok(Format::Date, "2025-13-25"));
        assert!(format_ok(Format::DateTime, "2025-11-25T10:00:00Z"));
        assert!(format_ok(Format::Uri, "https://x"));
        assert!(!format_ok(Format::Uri, "no scheme"));
    }
}
