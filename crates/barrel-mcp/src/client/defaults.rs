//! Form-mode elicitation defaults (SEP-1034): fields an accepted answer leaves out take the
//! `default` of their property in the requested schema.

use barrel_mcp_types::{ElicitAction, ElicitRequestParams, ElicitResult, JsonObject};
use serde_json::Value;

/// Fills the missing fields of an accepted form answer from the schema's `default`s. Declined
/// and cancelled answers, URL mode, and fields the answer has are left alone.
pub(crate) fn apply(params: &ElicitRequestParams, result: &mut ElicitResult) {
    let ElicitRequestParams::Form(form) = params else {
        return;
    };
    if result.action != ElicitAction::Accept {
        return;
    }
    let Some(properties) = form
        .requested_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return;
    };
    let content = result.content.get_or_insert_with(JsonObject::new);
    for (name, schema) in properties {
        if let Some(default) = schema.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> JsonObject {
        json!({ "type": "object", "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "nick": { "type": "string" }
        }})
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn fills_missing_fields_of_accepted_forms_only() {
        let params = ElicitRequestParams::form("?", schema());
        let mut given = json!({ "name": "Ada" })
            .as_object()
            .cloned()
            .unwrap_or_default();
        given.insert("extra".into(), json!(1));
        let mut accepted = ElicitResult::accept(given);
        apply(&params, &mut accepted);
        assert_eq!(
            accepted.content.map(Value::Object),
            Some(json!({ "name": "Ada", "age": 30, "extra": 1 }))
        );
        let mut empty = ElicitResult {
            action: ElicitAction::Accept,
            content: None,
            meta: None,
        };
        apply(&params, &mut empty);
        assert_eq!(
            empty.content.map(Value::Object),
            Some(json!({ "name": "John Doe", "age": 30 }))
        );
        let mut declined = ElicitResult::decline();
        apply(&params, &mut declined);
        assert_eq!(declined.content, None);
    }
}
