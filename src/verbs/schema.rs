//! Describing verbs from their types: JSON Schemas (draft-07, what OpenRPC 1.3 uses)
//! from `schemars`, and the XML-RPC type names `system.methodSignature` shows.

use crate::verbs::verb::ParamSpec;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value as Json};

/// `T`'s schema, self-contained (subschemas inlined, no `$schema` or `definitions`).
pub(crate) fn schema_of<T: JsonSchema>() -> Json {
    let settings = SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings.into_generator().root_schema_for::<T>().to_value();
    if let Some(o) = schema.as_object_mut() {
        o.remove("title");
    }
    schema
}

/// The parameters a parameter type stands for: a struct's fields (optional when not
/// `required`), a tuple's items (`arg0`, `arg1`, ...), none for `()`; anything else is one
/// optional list `params` taking the whole array.
pub(crate) fn params_of<P: JsonSchema>() -> Vec<ParamSpec> {
    let schema = schema_of::<P>();
    if let Some(props) = schema.get("properties").and_then(Json::as_object) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Json::as_array)
            .map(|r| r.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        return props
            .iter()
            .map(|(name, s)| spec(name, s.clone(), !required.contains(&name.as_str())))
            .collect();
    }
    if schema.get("type") == Some(&json!("null")) {
        return Vec::new();
    }
    if let Some(items) = schema.get("items").and_then(Json::as_array) {
        return items
            .iter()
            .enumerate()
            .map(|(i, s)| spec(&format!("arg{i}"), s.clone(), false))
            .collect();
    }
    vec![spec("params", schema, true)]
}

fn spec(name: &str, schema: Json, optional: bool) -> ParamSpec {
    ParamSpec {
        // Verbs live as long as the process; their names are leaked once at registration.
        name: Box::leak(name.to_owned().into_boxed_str()),
        kind: kind_of(&schema),
        optional,
        schema,
    }
}

/// The XML-RPC type name for a schema ("any" when it allows several types).
pub(crate) fn kind_of(schema: &Json) -> &'static str {
    let types: Vec<&str> = match schema.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
        _ => {
            let alts = ["anyOf", "oneOf"]
                .iter()
                .find_map(|k| schema.get(*k).and_then(Json::as_array));
            let non_null: Vec<&Json> = alts
                .map(|a| {
                    a.iter()
                        .filter(|s| s.get("type") != Some(&json!("null")))
                        .collect()
                })
                .unwrap_or_default();
            return match non_null.as_slice() {
                [one] => kind_of(one),
                _ => "any",
            };
        }
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    match types.as_slice() {
        ["integer"] => "int",
        ["number"] => "double",
        ["boolean"] => "boolean",
        ["string"] if schema.get("format") == Some(&json!("date-time")) => "dateTime.iso8601",
        ["string"] => "string",
        ["array"] => "array",
        ["object"] => "struct",
        _ => "any",
    }
}

/// The schema of a dynamic verb's parameter or result, from its XML-RPC type name.
pub(crate) fn schema_of_kind(kind: &str) -> Json {
    match kind {
        "int" | "i4" => json!({ "type": "integer" }),
        "double" => json!({ "type": "number" }),
        "boolean" => json!({ "type": "boolean" }),
        "string" => json!({ "type": "string" }),
        "dateTime.iso8601" => json!({ "type": "string", "format": "date-time" }),
        "base64" => json!({ "type": "string", "contentEncoding": "base64" }),
        // Items of any type, said outright: code generators fail on an array without.
        "array" => json!({ "type": "array", "items": {} }),
        "struct" => json!({ "type": "object" }),
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Create {
        /// The VM's id.
        #[serde(rename = "vmID")]
        vm_id: String,
        mem: Option<i64>,
        #[serde(default)]
        tags: Vec<String>,
        when: f64,
    }

    #[test]
    fn struct_fields_are_the_params_in_order() {
        let p = params_of::<Create>();
        let got: Vec<_> = p.iter().map(|p| (p.name, p.kind, p.optional)).collect();
        assert_eq!(
            got,
            [
                ("vmID", "string", false),
                ("mem", "int", true),
                ("tags", "array", true),
                ("when", "double", false)
            ]
        );
        assert_eq!(p[0].schema["description"], "The VM's id.");
        assert_eq!(params_of::<(String, bool)>()[1].kind, "boolean");
        assert!(params_of::<()>().is_empty());
    }
}
