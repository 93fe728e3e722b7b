//! Typed prompts and templates: a prompt's argument list derived from a `Deserialize +
//! JsonSchema` type (each field an argument, its doc comment the description, required unless
//! it is an `Option`), and a template's variables read into a struct.
//!
//! The handlers of [`ServerBuilder::typed_prompt`](super::ServerBuilder::typed_prompt) and
//! [`ServerBuilder::typed_template`](super::ServerBuilder::typed_template) return what is
//! natural to write (a `String`, a list of messages, the full result); [`IntoPromptResult`]
//! and [`IntoResourceContents`] turn it into the protocol's result.

use std::collections::BTreeMap;

use barrel_mcp_types::{
    ErrorObject, GetPromptResult, PromptArgument, PromptMessage, ResourceContents,
    TextResourceContents,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::handler::schema_object;

/// What a typed prompt's handler may return.
///
/// Example: [`ServerBuilder::typed_prompt`](super::ServerBuilder::typed_prompt).
pub trait IntoPromptResult {
    /// The `prompts/get` result.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

/// One user message.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(vec![PromptMessage::user(self)])
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(self)
    }
}

/// What a typed template's handler may return, given the URI that was read.
///
/// Example: [`ServerBuilder::typed_prompt`](super::ServerBuilder::typed_prompt).
pub trait IntoResourceContents {
    /// The contents of `resources/read`.
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents>;
}

/// One text content, with the template's MIME type.
impl IntoResourceContents for String {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::Text(TextResourceContents {
            uri: uri.to_owned(),
            mime_type: mime_type.map(str::to_owned),
            text: self,
            meta: None,
        })]
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_contents(self, _: &str, _: Option<&str>) -> Vec<ResourceContents> {
        self
    }
}

/// The argument list of a prompt taking `A`: one argument per property of `A`'s schema, in
/// the schema's order, described by its doc comment, required when the schema requires it
/// (fields that are not `Option` and have no default).
pub(crate) fn prompt_arguments<A: JsonSchema>() -> Result<Vec<PromptArgument>, String> {
    let schema = schema_object::<A>();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a typed prompt's arguments must be a struct".to_owned());
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Ok(properties
        .iter()
        .map(|(name, property)| {
            let mut argument = PromptArgument::new(name.as_str());
            argument.description = property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if required.contains(&name.as_str()) {
                argument = argument.required();
            }
            argument
        })
        .collect())
}

/// Reads string arguments (or template variables) into `T`; -32602 naming the problem when
/// they do not fit. A field of another type is parsed from its string (`"42"` for a `u32`,
/// `"true"` for a `bool`), as form and query decoders do.
pub(crate) fn from_strings<T: DeserializeOwned>(
    values: &BTreeMap<String, String>,
    what: &str,
) -> Result<T, ErrorObject> {
    let pairs = values
        .iter()
        .map(|(k, v)| (k.as_str(), StringValue(v.as_str())));
    let map = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(pairs);
    T::deserialize(map).map_err(|e| ErrorObject::invalid_params(format!("invalid {what}: {e}")))
}

/// One string value that deserializes as what the field wants, parsed from the text.
#[derive(Clone, Copy)]
struct StringValue<'a>(&'a str);

impl<'de> serde::de::IntoDeserializer<'de, serde::de::value::Error> for StringValue<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

macro_rules! parsed {
    ($($method:ident => $visit:ident),* $(,)?) => {
        $(
            fn $method<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                match self.0.parse() {
                    Ok(value) => visitor.$visit(value),
                    Err(_) => Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(self.0),
                        &visitor,
                    )),
                }
            }
        )*
    };
}

impl<'de> serde::Deserializer<'de> for StringValue<'de> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_borrowed_str(self.0)
    }

    parsed! {
        deserialize_bool => visit_bool,
        deserialize_i8 => visit_i8,
        deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32,
        deserialize_i64 => visit_i64,
        deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16,
        deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64,
        deserialize_f32 => visit_f32,
        deserialize_f64 => visit_f64,
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        use serde::de::IntoDeserializer;
        visitor.visit_enum(self.0.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map
        struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// A code review.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Review {
        /// The code to review.
        code: String,
        /// How strict to be.
        strictness: Option<String>,
    }

    #[test]
    fn arguments_come_from_the_fields() {
        let arguments = prompt_arguments::<Review>().expect("a struct");
        assert_eq!(arguments.len(), 2);
        assert_eq!(arguments[0].name, "code");
        assert_eq!(arguments[0].required, Some(true));
        assert_eq!(
            arguments[0].description.as_deref(),
            Some("The code to review.")
        );
        assert_eq!(arguments[1].name, "strictness");
        assert_eq!(arguments[1].required, None);
        assert!(prompt_arguments::<String>().is_err());
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Typed {
        id: u32,
        ratio: f64,
        on: bool,
        mode: Mode,
        name: Option<String>,
    }

    #[test]
    fn strings_parse_into_other_field_types() {
        let values: BTreeMap<String, String> = [
            ("id", "7"),
            ("ratio", "0.5"),
            ("on", "true"),
            ("mode", "slow"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let typed: Typed = from_strings(&values, "variables").expect("fits");
        assert_eq!(
            typed,
            Typed {
                id: 7,
                ratio: 0.5,
                on: true,
                mode: Mode::Slow,
                name: None
            }
        );
        let mut bad = values;
        bad.insert("id".to_owned(), "seven".to_owned());
        let error = from_strings::<Typed>(&bad, "variables").expect_err("not a number");
        assert!(error.message.contains("seven"), "{}", error.message);
        let _ = Mode::Fast;
    }

    #[test]
    fn strings_fill_the_struct_or_name_the_problem() {
        let mut values = BTreeMap::new();
        values.insert("code".to_owned(), "fn main() {}".to_owned());
        let review: Review = from_strings(&values, "prompt arguments").expect("fits");
        assert_eq!(review.code, "fn main() {}");
        assert!(review.strictness.is_none());
        let error = from_strings::<Review>(&BTreeMap::new(), "prompt arguments")
            .err()
            .expect("missing code");
        assert!(error.message.contains("code"), "{}", error.message);
    }
}
