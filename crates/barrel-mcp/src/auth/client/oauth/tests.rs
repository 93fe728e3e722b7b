//! Tests of the OAuth client's own checks: the RFC 9207 `iss` table, scope splitting, the
//! client id the grants need, and secrets kept out of `Debug`.

use super::*;
use discovery::ServerMetadata;

fn found(advertised: bool) -> Discovered {
    Discovered {
        resource: "https://mcp.example/mcp".into(),
        resource_metadata: None,
        server: ServerMetadata {
            issuer: "https://as.example".into(),
            authorization_response_iss_parameter_supported: advertised,
            ..ServerMetadata::default()
        },
        dpop_wanted: false,
    }
}

fn callback(state: &str, iss: Option<&str>) -> Callback {
    Callback {
        code: Some("c".into()),
        state: Some(state.into()),
        iss: iss.map(str::to_owned),
        ..Callback::default()
    }
}

#[test]
fn the_rfc_9207_table() {
    let good = Some("https://as.example");
    // advertised and right; not advertised and absent: proceed.
    assert!(check_callback(&found(true), &callback("s", good), "s").is_ok());
    assert!(check_callback(&found(false), &callback("s", None), "s").is_ok());
    assert!(check_callback(&found(false), &callback("s", good), "s").is_ok());
    // advertised and absent; wrong; unadvertised and wrong; a trailing slash: reject.
    assert!(check_callback(&found(true), &callback("s", None), "s").is_err());
    assert!(check_callback(&found(true), &callback("s", Some("https://evil")), "s").is_err());
    assert!(check_callback(&found(false), &callback("s", Some("https://evil")), "s").is_err());
    assert!(
        check_callback(
            &found(true),
            &callback("s", Some("https://as.example/")),
            "s"
        )
        .is_err()
    );
    // state first.
    assert!(check_callback(&found(false), &callback("other", None), "s").is_err());
}

#[test]
fn scopes_are_split_without_duplicates() {
    assert_eq!(split_scopes(" a b  a c"), ["a", "b", "c"]);
}

#[test]
fn grants_other_than_the_code_grant_need_a_client_id() {
    let missing = OAuthClient::builder("http://127.0.0.1:1/mcp")
        .unwrap()
        .client_credentials()
        .build()
        .unwrap_err();
    assert!(missing.to_string().contains("client_id"));
    assert!(
        OAuthClient::builder("http://127.0.0.1:1/mcp")
            .unwrap()
            .build()
            .is_err()
    );
    let ok = OAuthClient::builder("http://127.0.0.1:1/mcp")
        .unwrap()
        .client_id("c")
        .client_secret("hunter2")
        .client_credentials()
        .build()
        .unwrap();
    assert!(!format!("{ok:?}").contains("hunter2"));
}
