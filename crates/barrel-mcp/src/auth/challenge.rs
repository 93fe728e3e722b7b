//! [`Challenge`]: one `WWW-Authenticate` challenge (RFC 7235 §4.1, RFC 6750 §3), built by the
//! server's 401 and 403 answers and parsed by the client to find where to authenticate.
//!
//! The parser is lenient and linear: several challenges in one header value or in several
//! headers, quoted strings with escapes, scheme and parameter names in any case, a `token68`
//! (`Basic dXNlcg==`) kept as is. Junk between challenges is skipped rather than failing the
//! whole header: a client must still find `resource_metadata` next to a parameter it does not
//! know.

use std::fmt;

/// One authentication challenge: a scheme and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Challenge {
    /// The scheme (`Bearer`, `Basic`, `DPoP`), as written.
    pub scheme: String,
    /// A `token68` following the scheme instead of parameters, if any.
    pub token68: Option<String>,
    /// The parameters, in order, names as written.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// A challenge of `scheme` with no parameter.
    pub fn new(scheme: impl Into<String>) -> Self {
        Self {
            scheme: scheme.into(),
            ..Self::default()
        }
    }

    /// A `Bearer` challenge with no parameter.
    pub fn bearer() -> Self {
        Self::new("Bearer")
    }

    /// A `Basic` challenge for `realm`, asking for UTF-8 (RFC 7617 §2.1).
    pub fn basic(realm: impl Into<String>) -> Self {
        Self::new("Basic")
            .with("realm", realm)
            .with("charset", "UTF-8")
    }

    /// Adds a parameter.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// The value of the parameter `name` (compared case-insensitively), the first if repeated.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// True when this challenge is of `scheme` (compared case-insensitively).
    pub fn is_scheme(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// Every challenge in the `WWW-Authenticate` header values given, in order.
    pub fn parse_all<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
        let mut challenges = Vec::new();
        for value in values {
            Parser::new(value).parse_into(&mut challenges);
        }
        challenges
    }

    /// The first challenge of `scheme` in the header values given.
    pub fn find<'a>(values: impl IntoIterator<Item = &'a str>, scheme: &str) -> Option<Challenge> {
        Self::parse_all(values)
            .into_iter()
            .find(|challenge| challenge.is_scheme(scheme))
    }
}

/// The header value: `Bearer resource_metadata="…", scope="…"`. Values are always quoted;
/// control characters (which a header cannot carry) become spaces.
impl fmt::Display for Challenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.scheme)?;
        if let Some(token68) = &self.token68 {
            return write!(f, " {token68}");
        }
        for (index, (name, value)) in self.params.iter().enumerate() {
            f.write_str(if index == 0 { " " } else { ", " })?;
            write!(f, "{name}=\"")?;
            for c in value.chars() {
                match c {
                    '"' | '\\' => write!(f, "\\{c}")?,
                    c if c.is_control() => f.write_str(" ")?,
                    c => write!(f, "{c}")?,
                }
            }
            f.write_str("\"")?;
        }
        Ok(())
    }
}

/// A cursor over one header value.
struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            text,
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn take_while(&mut self, accept: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&accept) {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    fn parse_into(mut self, out: &mut Vec<Challenge>) {
        let mut current: Option<Challenge> = None;
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
                self.pos += 1;
            }
            let Some(next) = self.peek() else { break };
            let word = self.take_while(is_tchar);
            if word.is_empty() {
                // Not a token: junk (a stray quote, a non-ASCII byte). Skip one character.
                self.pos += self.text[self.pos..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
                let _ = next;
                continue;
            }
            let after_word = self.pos;
            self.skip_spaces();
            if self.peek() == Some(b'=') && current.is_some() {
                self.pos += 1;
                self.skip_spaces();
                let value = self.value();
                if let Some(challenge) = current.as_mut() {
                    challenge.params.push((word.to_owned(), value));
                }
                continue;
            }
            self.pos = after_word;
            out.extend(current.take());
            let mut challenge = Challenge::new(word);
            challenge.token68 = self.token68();
            current = Some(challenge);
        }
        out.extend(current);
    }

    /// A parameter value: a quoted string (escapes undone) or a token.
    fn value(&mut self) -> String {
        if self.peek() != Some(b'"') {
            return self.take_while(is_tchar).to_owned();
        }
        self.pos += 1;
        let mut value = String::new();
        let mut chars = self.text[self.pos..].char_indices();
        while let Some((offset, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += offset + 1;
                    return value;
                }
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                c => value.push(c),
            }
        }
        // An unterminated quoted string runs to the end of the value.
        self.pos = self.bytes.len();
        value
    }

    /// A `token68` right after a scheme: characters, `=` padding, then the end or a comma.
    /// Leaves the cursor where it was when there is none (what follows is parameters).
    fn token68(&mut self) -> Option<String> {
        let start = self.pos;
        self.skip_spaces();
        if self.pos == start {
            return None;
        }
        let token_start = self.pos;
        self.take_while(is_token68_char);
        if self.pos == token_start {
            self.pos = start;
            return None;
        }
        self.take_while(|b| b == b'=');
        let token_end = self.pos;
        self.skip_spaces();
        if matches!(self.peek(), None | Some(b',')) {
            Some(self.text[token_start..token_end].to_owned())
        } else {
            self.pos = start;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_quoted_parameters() {
        let challenge = Challenge::bearer()
            .with("resource_metadata", "https://a.example/.well-known/x")
            .with("scope", "a \"b\" c\\d\r\n");
        assert_eq!(
            challenge.to_string(),
            r#"Bearer resource_metadata="https://a.example/.well-known/x", scope="a \"b\" c\\d  ""#
        );
        assert_eq!(
            Challenge::basic("mcp").to_string(),
            r#"Basic realm="mcp", charset="UTF-8""#
        );
    }

    #[test]
    fn parses_several_challenges_in_any_case() {
        let parsed = Challenge::parse_all([
            r#"bearer realm="x", Error="invalid_token", error_description="bad \"one\"""#,
            r#"Basic realm="y", DPoP algs="ES256 RS256""#,
        ]);
        assert_eq!(parsed.len(), 3);
        assert!(parsed[0].is_scheme("Bearer"));
        assert_eq!(parsed[0].get("error"), Some("invalid_token"));
        assert_eq!(parsed[0].get("ERROR_DESCRIPTION"), Some("bad \"one\""));
        assert_eq!(parsed[1].get("realm"), Some("y"));
        assert!(parsed[2].is_scheme("dpop"));
        assert_eq!(parsed[2].get("algs"), Some("ES256 RS256"));
    }

    #[test]
    fn parses_token68_and_bare_schemes() {
        let parsed = Challenge::parse_all(["Negotiate abc+/==, Bearer, Basic realm=plain"]);
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].token68.as_deref(), Some("abc+/=="));
        assert!(parsed[1].params.is_empty() && parsed[1].token68.is_none());
        assert_eq!(parsed[2].get("realm"), Some("plain"));
    }

    #[test]
    fn round_trips_what_it_builds() {
        let built = Challenge::bearer()
            .with("error", "insufficient_scope")
            .with("scope", "mcp:read mcp:write")
            .with(
                "resource_metadata",
                "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp",
            );
        let parsed = Challenge::parse_all([built.to_string().as_str()]);
        assert_eq!(parsed, [built]);
    }

    #[test]
    fn survives_junk() {
        for junk in [
            "",
            ",,,",
            "\"",
            "=",
            "Bearer realm=\"unterminated",
            "Bearer =x, ==, é, scope=\"a\"",
            "Bearer realm=\"\\",
        ] {
            let parsed = Challenge::parse_all([junk]);
            assert!(parsed.len() <= 2, "{junk}: {parsed:?}");
        }
        let found = Challenge::find(["junk \u{1} Bearer scope=\"a b\""], "bearer");
        assert_eq!(
            found
                .and_then(|c| c.get("scope").map(str::to_owned))
                .as_deref(),
            Some("a b")
        );
    }
}
