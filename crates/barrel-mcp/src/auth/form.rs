//! `application/x-www-form-urlencoded`: token requests are forms, and so are the query of an
//! authorization URL and of the redirect that answers it.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What stays as it is in a form value: letters, digits and `*-._` (the WHATWG form rules);
/// a space becomes `+`.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b' ');

/// An ordered list of form fields. `Debug` shows the names only: values are often secrets.
#[derive(Default, Clone)]
pub(crate) struct Form(Vec<(String, String)>);

impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

impl Form {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds a field.
    pub(crate) fn add(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        self.0.push((name.to_owned(), value.into()));
        self
    }

    /// Adds a field when there is a value.
    #[cfg(any(feature = "oauth-client", test))]
    pub(crate) fn add_opt(&mut self, name: &str, value: Option<impl Into<String>>) -> &mut Self {
        if let Some(value) = value {
            self.add(name, value);
        }
        self
    }

    /// The encoded form.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        for (name, value) in &self.0 {
            if !out.is_empty() {
                out.push('&');
            }
            out.push_str(&encode(name));
            out.push('=');
            out.push_str(&encode(value));
        }
        out
    }

    /// The fields of an encoded form or query (a field with no `=` has an empty value).
    #[cfg(any(feature = "oauth-client", test))]
    pub(crate) fn parse(text: &str) -> Self {
        let fields = text
            .split('&')
            .filter(|field| !field.is_empty())
            .map(|field| {
                let (name, value) = field.split_once('=').unwrap_or((field, ""));
                (decode(name), decode(value))
            })
            .collect();
        Self(fields)
    }

    /// The first value of `name`.
    #[cfg(any(feature = "oauth-client", test))]
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// How many times `name` appears.
    #[cfg(test)]
    pub(crate) fn count(&self, name: &str) -> usize {
        self.0.iter().filter(|(key, _)| key == name).count()
    }
}

/// `Authorization: Basic` for an OAuth client (RFC 6749 §2.3.1: id and secret form-encoded
/// first), marked sensitive. `None` when the result is not a valid header value.
pub(crate) fn basic_credentials(id: &str, secret: &str) -> Option<http::HeaderValue> {
    use base64::Engine as _;
    let pair = format!("{}:{}", encode(id), encode(secret));
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    );
    let mut header = http::HeaderValue::try_from(value).ok()?;
    header.set_sensitive(true);
    Some(header)
}

fn encode(text: &str) -> String {
    utf8_percent_encode(text, FORM)
        .to_string()
        .replace(' ', "+")
}

#[cfg(any(feature = "oauth-client", test))]
fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut form = Form::new();
        form.add("scope", "a b:c")
            .add("redirect_uri", "http://x/cb?y=1&z")
            .add("é", "+");
        let text = form.encode();
        assert_eq!(
            text,
            "scope=a+b%3Ac&redirect_uri=http%3A%2F%2Fx%2Fcb%3Fy%3D1%26z&%C3%A9=%2B"
        );
        let back = Form::parse(&text);
        assert_eq!(back.get("scope"), Some("a b:c"));
        assert_eq!(back.get("redirect_uri"), Some("http://x/cb?y=1&z"));
        assert_eq!(back.get("é"), Some("+"));
        assert_eq!(Form::parse("a&b=&a=2").count("a"), 2);
        assert!(!format!("{form:?}").contains("a b"));
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        let header = basic_credentials("a b", "c:d").unwrap();
        // base64("a+b:c%3Ad")
        assert_eq!(header.to_str().unwrap(), "Basic YStiOmMlM0Fk");
        assert!(header.is_sensitive());
    }
}
