//! The JSON Schema of [`Value`] (feature `schemars`), so a typed verb may take or return
//! one and still describe itself.

use crate::Value;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

impl JsonSchema for Value {
    fn schema_name() -> Cow<'static, str> {
        "Value".into()
    }
    fn inline_schema() -> bool {
        true
    }
    /// Any value at all: the empty schema.
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({})
    }
}

impl JsonSchema for crate::Str {
    fn schema_name() -> Cow<'static, str> {
        String::schema_name()
    }
    fn inline_schema() -> bool {
        true
    }
    /// A string, as `String`'s: the two are one type on the wire.
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        String::json_schema(g)
    }
}
