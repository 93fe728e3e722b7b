//! Elicitation: `elicitation/create`, where a server asks the user for input through the client,
//! in form mode (a flat JSON Schema) or URL mode (an out-of-band web page).
//!
//! Form-mode params are written without `mode`, which every revision reads as form mode (2025-06-18
//! has no `mode` at all); `mode: "form"` is accepted on read.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::{JsonObject, Meta};

/// Params of `elicitation/create`.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode: `mode` absent or `"form"`.
    Form(ElicitFormParams),
    /// URL mode: `mode: "url"` (2025-11-25 and later).
    Url(ElicitUrlParams),
}

/// Form-mode elicitation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ElicitFormParams {
    /// What to ask the user.
    pub message: String,
    /// A flat object schema of primitive properties describing the answer.
    pub requested_schema: JsonObject,
    /// Task augmentation (2025-11-25 only).
    pub task: Option<Value>,
    /// Metadata.
    pub meta: Option<Meta>,
}

/// URL-mode elicitation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ElicitUrlParams {
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Identifies the elicitation for `notifications/elicitation/complete` (2025-11-25 only).
    pub elicitation_id: Option<String>,
    /// Task augmentation (2025-11-25 only).
    pub task: Option<Value>,
    /// Metadata.
    pub meta: Option<Meta>,
}

impl ElicitRequestParams {
    /// Form-mode params.
    pub fn form(message: impl Into<String>, requested_schema: JsonObject) -> Self {
        Self::Form(ElicitFormParams {
            message: message.into(),
            requested_schema,
            ..ElicitFormParams::default()
        })
    }

    /// URL-mode params.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self::Url(ElicitUrlParams {
            message: message.into(),
            url: url.into(),
            ..ElicitUrlParams::default()
        })
    }

    /// Sets the elicitation id of URL mode (2025-11-25); no effect on form mode.
    pub fn with_elicitation_id(mut self, id: impl Into<String>) -> Self {
        if let Self::Url(u) = &mut self {
            u.elicitation_id = Some(id.into());
        }
        self
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(f) => &f.message,
            Self::Url(u) => &u.message,
        }
    }

    /// True for URL mode.
    pub fn is_url(&self) -> bool {
        matches!(self, Self::Url(_))
    }
}

/// The wire form of both modes, every field optional.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requested_schema: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    elicitation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<Value>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self.clone() {
            Self::Form(f) => Wire {
                mode: None,
                message: f.message,
                requested_schema: Some(f.requested_schema),
                url: None,
                elicitation_id: None,
                task: f.task,
                meta: f.meta,
            },
            Self::Url(u) => Wire {
                mode: Some("url".into()),
                message: u.message,
                requested_schema: None,
                url: Some(u.url),
                elicitation_id: u.elicitation_id,
                task: u.task,
                meta: u.meta,
            },
        };
        wire.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(deserializer)?;
        match w.mode.as_deref() {
            None | Some("form") => Ok(Self::Form(ElicitFormParams {
                message: w.message,
                requested_schema: w
                    .requested_schema
                    .ok_or_else(|| de::Error::missing_field("requestedSchema"))?,
                task: w.task,
                meta: w.meta,
            })),
            Some("url") => Ok(Self::Url(ElicitUrlParams {
                message: w.message,
                url: w.url.ok_or_else(|| de::Error::missing_field("url"))?,
                elicitation_id: w.elicitation_id,
                task: w.task,
                meta: w.meta,
            })),
            Some(other) => Err(de::Error::unknown_variant(other, &["form", "url"])),
        }
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form) or consented (URL).
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without choosing.
    #[default]
    Cancel,
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values (form mode, on accept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ElicitResult {
    /// An accepted form with its values.
    pub fn accept(content: JsonObject) -> Self {
        Self {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
        }
    }

    /// A declined elicitation.
    pub fn decline() -> Self {
        Self {
            action: ElicitAction::Decline,
            ..Self::default()
        }
    }

    /// A cancelled elicitation.
    pub fn cancel() -> Self {
        Self::default()
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteParams {
    /// The id of the URL elicitation that finished.
    pub elicitation_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_round_trip() {
        let form: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "m", "requestedSchema": {"type": "object"}
        }))
        .unwrap();
        assert!(!form.is_url());
        assert_eq!(
            serde_json::to_value(&form).unwrap(),
            json!({"message": "m", "requestedSchema": {"type": "object"}})
        );
        let url = ElicitRequestParams::url("go", "https://x").with_elicitation_id("e1");
        let v = serde_json::to_value(&url).unwrap();
        assert_eq!(
            v,
            json!({"mode": "url", "message": "go", "url": "https://x", "elicitationId": "e1"})
        );
        assert_eq!(
            serde_json::from_value::<ElicitRequestParams>(v).unwrap(),
            url
        );
        assert!(
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "url", "message": "x"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "x", "message": "x"}))
                .is_err()
        );
    }
}
