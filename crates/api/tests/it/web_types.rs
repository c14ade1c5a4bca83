//! The web client's wire types come from the contract: `web/types/wire.d.ts` is generated from
//! the OpenAPI document's schemas (every flag on, so every route's types are there) and checked
//! in; this test fails when it drifts. `STEWARD_UPDATE_WEB_TYPES=1 cargo xtask test -p api --
//! web_types` writes it again. The client's JSDoc names these types
//! (`import("../../types/wire").EmailThreadSummary`) instead of describing them by hand.

use std::fmt::Write as _;

use domain::flags::{FeatureFlags, Flag};
use serde_json::Value;

const HEADER: &str = "// Generated from the OpenAPI document's schemas by crates/api/tests/it/web_types.rs; do not edit.\n\
// Regenerate: STEWARD_UPDATE_WEB_TYPES=1 cargo xtask test -p api -- web_types\n";

/// A schema name as it is referred to (`#/components/schemas/<name>`).
fn reference(schema: &Value) -> Option<&str> {
    schema["$ref"].as_str()?.strip_prefix("#/components/schemas/")
}

/// `text` as a TypeScript string literal.
fn literal(value: &Value) -> String {
    match value {
        Value::String(text) => serde_json::to_string(text).expect("a string"),
        other => other.to_string(),
    }
}

/// `member` parenthesized when it is a union or an intersection (as an array's item).
fn grouped(member: String) -> String {
    if member.contains(" | ") || member.contains(" & ") {
        format!("({member})")
    } else {
        member
    }
}

/// A JSDoc comment of `description`, indented by `indent`.
fn comment(description: Option<&str>, indent: &str) -> String {
    let Some(description) = description.map(str::trim).filter(|text| !text.is_empty()) else {
        return String::new();
    };
    let body = description.replace("*/", "*\\/");
    if body.contains('\n') {
        let lines: String = body
            .lines()
            .map(|line| format!("{indent} * {line}\n").replace(" * \n", " *\n"))
            .collect();
        format!("{indent}/**\n{lines}{indent} */\n")
    } else {
        format!("{indent}/** {body} */\n")
    }
}

/// The TypeScript type of `schema`.
fn type_of(schema: &Value, indent: &str) -> String {
    if let Some(name) = reference(schema) {
        return name.to_owned();
    }
    if let Some(value) = schema.get("const") {
        return literal(value);
    }
    if let Some(values) = schema["enum"].as_array() {
        return values.iter().map(literal).collect::<Vec<_>>().join(" | ");
    }
    for (keyword, separator) in [("oneOf", " | "), ("anyOf", " | "), ("allOf", " & ")] {
        if let Some(members) = schema[keyword].as_array() {
            let mut parts: Vec<String> = members.iter().map(|member| grouped(type_of(member, indent))).collect();
            parts.dedup();
            return parts.join(separator);
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return if schema.get("properties").is_some() {
            object(schema, indent)
        } else {
            "unknown".to_owned()
        };
    }
    types
        .iter()
        .map(|kind| match *kind {
            "string" => "string".to_owned(),
            "integer" | "number" => "number".to_owned(),
            "boolean" => "boolean".to_owned(),
            "null" => "null".to_owned(),
            "array" => format!("{}[]", grouped(type_of(&schema["items"], indent))),
            "object" => object(schema, indent),
            other => panic!("a schema of type {other}"),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// An object schema: its properties (optional unless required), or a record.
fn object(schema: &Value, indent: &str) -> String {
    let Some(properties) = schema["properties"].as_object() else {
        return match &schema["additionalProperties"] {
            Value::Object(_) => format!("Record<string, {}>", type_of(&schema["additionalProperties"], indent)),
            _ => "Record<string, unknown>".to_owned(),
        };
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut text = String::from("{\n");
    // By name: the document's member order is not kept by every JSON map.
    let mut properties: Vec<(&String, &Value)> = properties.iter().collect();
    properties.sort_by_key(|(name, _)| *name);
    for (name, property) in properties {
        text.push_str(&comment(property["description"].as_str(), &inner));
        let optional = if required.contains(&name.as_str()) { "" } else { "?" };
        let _ = writeln!(
            text,
            "{inner}{}{optional}: {};",
            quoted(name),
            type_of(property, &inner)
        );
    }
    text.push_str(indent);
    text.push('}');
    text
}

/// A property name, quoted when it is not an identifier.
fn quoted(name: &str) -> String {
    let identifier = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if identifier {
        name.to_owned()
    } else {
        serde_json::to_string(name).expect("a string")
    }
}

/// Every schema of `document` as an exported TypeScript type, by name.
fn declarations(document: &Value) -> String {
    let schemas = document["components"]["schemas"].as_object().expect("schemas");
    let mut text = String::from(HEADER);
    for (name, schema) in schemas {
        text.push('\n');
        text.push_str(&comment(schema["description"].as_str(), ""));
        let _ = writeln!(text, "export type {name} = {};", type_of(schema, ""));
    }
    text
}

fn generated() -> String {
    let flags = FeatureFlags::with(&[
        Flag::NotificationApi,
        Flag::NotificationDispatch,
        Flag::Email,
        Flag::EmailMode,
        Flag::EmailUnsubscribe,
    ])
    .expect("flags");
    let document = serde_json::to_value(api::openapi::annotated(&flags)).expect("the document as JSON");
    declarations(&document)
}

#[test]
fn the_web_clients_wire_types_are_generated_from_the_openapi_document() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/types/wire.d.ts");
    let generated = generated();
    if std::env::var_os("STEWARD_UPDATE_WEB_TYPES").is_some() {
        std::fs::write(path, &generated).expect("write web/types/wire.d.ts");
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "web/types/wire.d.ts differs from the OpenAPI document's schemas: regenerate it with \
         STEWARD_UPDATE_WEB_TYPES=1 cargo xtask test -p api -- web_types"
    );
    for name in ["EmailThreadSummary", "Draft", "Problem", "Session", "Approval"] {
        assert!(
            generated.contains(&format!("export type {name} = ")),
            "{name} is declared"
        );
    }
}

#[test]
fn schemas_become_typescript_types() {
    let schema = serde_json::json!({
        "type": "object",
        "description": "A row.",
        "required": ["id", "state"],
        "properties": {
            "id": { "type": "string", "format": "uuid" },
            "state": { "type": "string", "enum": ["a", "b"] },
            "note": { "type": ["string", "null"], "description": "Why." },
            "tags": { "type": "array", "items": { "oneOf": [{ "$ref": "#/components/schemas/Tag" }, { "type": "null" }] } },
            "extra": { "type": "object", "additionalProperties": { "type": "integer" } },
            "data-x": {}
        }
    });
    assert_eq!(
        type_of(&schema, ""),
        "{\n  \"data-x\"?: unknown;\n  extra?: Record<string, number>;\n  id: string;\n  /** Why. */\n  note?: string | null;\n  \
         state: \"a\" | \"b\";\n  tags?: (Tag | null)[];\n}"
    );
}
