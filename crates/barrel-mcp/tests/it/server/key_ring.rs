//! `requestState` keys shared by several servers: a 2026-07-28 `input_required` round trip
//! started on one server completes on another that holds the same key ring (as behind a
//! round-robin proxy); rotated rings; servers without the key; tampered key ids and MACs; and
//! the key file and list formats.

use barrel_mcp::server::request_state::{KeyError, KeyRing, MAX_KEY_FILE_LEN, MAX_KEYS};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::ElicitRequestParams;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{TestClient, connect, text_of};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A server whose `ask_name` tool elicits a name, sealing with `ring` (a random key if none).
fn node(ring: Option<KeyRing>) -> Server {
    let builder = Server::builder().name("node", "1.0.0").tool(
        "ask_name",
        "Elicit a name",
        |ctx: Ctx, _: NoArgs| async move {
            let schema =
                json!({ "type": "object", "properties": { "name": { "type": "string" } } });
            let answer = ctx
                .elicit(ElicitRequestParams::form(
                    "Name?",
                    schema.as_object().cloned().unwrap_or_default(),
                ))
                .await?;
            let name = answer
                .content
                .and_then(|c| c.get("name").cloned())
                .unwrap_or_default();
            Ok(format!("Hello, {}!", name.as_str().unwrap_or("?")))
        },
    );
    match ring {
        Some(ring) => builder.request_state_keys(ring),
        None => builder,
    }
    .build()
    .expect("the node builds")
}

fn params() -> Value {
    json!({ "name": "ask_name", "arguments": {} })
}

fn caps() -> Value {
    json!({ "elicitation": {} })
}

/// Round 1 on `client`: the input request's key and the sealed `requestState`.
async fn ask(client: &TestClient) -> (String, String) {
    let first = client
        .stateless("tools/call", params(), caps())
        .await
        .expect("round 1");
    assert_eq!(first["resultType"], "input_required", "{first}");
    let key = first["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("one input request");
    let state = first["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    (key, state)
}

/// Round 2 on `client`, with the answer to `key` and `state`.
async fn retry(client: &TestClient, key: &str, state: &str) -> Result<Value, (i32, String)> {
    let mut retry = params();
    retry["inputResponses"] =
        json!({ key: { "action": "accept", "content": { "name": "Grace" } } });
    retry["requestState"] = json!(state);
    client
        .stateless("tools/call", retry, caps())
        .await
        .map_err(|e| (e.code.0, e.message))
}

/// Writes `text` to a fresh file under the target directory; returns its path.
fn key_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("key-ring-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for key files");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the key file is written");
    path
}

/// Asserts the refusal a forged token gets.
fn assert_forged(result: Result<Value, (i32, String)>) {
    let (code, message) = result.expect_err("refused");
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("invalid requestState") && message.contains("integrity check"),
        "{message}"
    );
}

#[tokio::test]
async fn two_nodes_with_one_key_file_open_each_others_states() {
    let text = format!(
        "# the fleet's requestState keys\n{}\n",
        STANDARD.encode([11u8; 32])
    );
    let path = key_file("shared", &text);
    let a = connect(&node(Some(
        KeyRing::from_file(&path).expect("node a's keys"),
    )));
    let b = connect(&node(Some(
        KeyRing::from_file(&path).expect("node b's keys"),
    )));

    // Round 1 on A, round 2 on B, and the other way round.
    let (key, state) = ask(&a).await;
    let done = retry(&b, &key, &state).await.expect("B opens A's state");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text_of(&done), "Hello, Grace!");
    let (key, state) = ask(&b).await;
    let done = retry(&a, &key, &state).await.expect("A opens B's state");
    assert_eq!(text_of(&done), "Hello, Grace!");
    // The token names the key that sealed it.
    let kid = KeyRing::kid_of(&[11u8; 32]);
    assert!(state.starts_with(&format!("v2.{kid}.")), "{state}");
}

#[tokio::test]
async fn a_rotated_ring_opens_old_states_and_seals_with_the_new_key() {
    let old = [21u8; 32];
    let new = [22u8; 48];
    let before = connect(&node(Some(KeyRing::single(&old).expect("old"))));
    let during = connect(&node(Some(
        KeyRing::new([&new[..], &old]).expect("rotated"),
    )));
    let after = connect(&node(Some(KeyRing::single(&new).expect("new"))));

    // A retry in flight across the rotation completes.
    let (key, state) = ask(&before).await;
    let done = retry(&during, &key, &state)
        .await
        .expect("the old key opens");
    assert_eq!(text_of(&done), "Hello, Grace!");

    let (key, state) = ask(&during).await;
    assert!(
        state.starts_with(&format!("v2.{}.", KeyRing::kid_of(&new))),
        "the new key seals: {state}"
    );
    assert!(retry(&after, &key, &state).await.is_ok());
    // A node still on the old key alone refuses it, as any forgery.
    assert_forged(retry(&before, &key, &state).await);
    // Once the old key is dropped, its tokens are refused.
    let (key, state) = ask(&before).await;
    assert_forged(retry(&after, &key, &state).await);
}

#[tokio::test]
async fn a_node_without_the_key_refuses_cleanly() {
    let keyed = connect(&node(Some(KeyRing::single(&[31u8; 32]).expect("key"))));
    let random = connect(&node(None));
    let (key, state) = ask(&keyed).await;
    assert_forged(retry(&random, &key, &state).await);
    let (key, state) = ask(&random).await;
    assert_forged(retry(&keyed, &key, &state).await);
    // Both still serve their own.
    assert!(retry(&random, &key, &state).await.is_ok());
}

#[tokio::test]
async fn a_tampered_key_id_or_mac_is_refused() {
    let first = [41u8; 32];
    let second = [42u8; 32];
    let ring = KeyRing::new([first, second]).expect("two keys");
    let client = connect(&node(Some(ring)));
    let (key, state) = ask(&client).await;
    let parts: Vec<&str> = state.split('.').collect();
    assert_eq!(parts.len(), 4, "{state}");
    let (version, kid, payload, mac) = (parts[0], parts[1], parts[2], parts[3]);
    assert_eq!((version, kid), ("v2", KeyRing::kid_of(&first).as_str()));

    // The other key of the ring, an unknown key id, or an altered one: all refused.
    let flipped = {
        let mut bytes = kid.as_bytes().to_vec();
        bytes[0] = if bytes[0] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).expect("ASCII")
    };
    for kid in [KeyRing::kid_of(&second), "AAAAAAAA".to_owned(), flipped] {
        assert_forged(retry(&client, &key, &format!("v2.{kid}.{payload}.{mac}")).await);
    }
    // An altered MAC, a MAC of the wrong length, no MAC.
    let mut bytes = mac.as_bytes().to_vec();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(bytes).expect("ASCII");
    assert_forged(retry(&client, &key, &format!("v2.{kid}.{payload}.{altered}")).await);
    assert_forged(retry(&client, &key, &format!("v2.{kid}.{payload}.{}", &mac[..20])).await);
    let (code, message) = retry(&client, &key, &format!("v2.{kid}.{payload}"))
        .await
        .expect_err("no MAC");
    assert_eq!(code, -32602, "{message}");
    // A key id of another length is malformed.
    let (code, message) = retry(&client, &key, &format!("v2.{kid}A.{payload}.{mac}"))
        .await
        .expect_err("a longer key id");
    assert_eq!(code, -32602);
    assert!(message.contains("malformed"), "{message}");
    // Untouched, it opens.
    assert!(retry(&client, &key, &state).await.is_ok());
}

#[test]
fn key_files_take_base64_in_either_alphabet_or_hex_with_comments() {
    // Bytes whose base64 uses `+` and `/` (standard) or `-` and `_` (URL-safe).
    let keys: [[u8; 32]; 4] = [[0xfb; 32], [0xff; 32], [3; 32], [4; 32]];
    let hex: String = keys[3].iter().map(|b| format!("{b:02x}")).collect();
    let text = format!(
        "# requestState keys, the sealing key first\n\
         \n\
         {}\n\
         \t{}   # retiring on Friday\n\
         {}\n\
         hex:{}\n",
        STANDARD.encode(keys[0]),
        URL_SAFE_NO_PAD.encode(keys[1]),
        STANDARD.encode(keys[2]).trim_end_matches('='),
        hex.to_uppercase(),
    );
    assert!(
        text.contains('+') && text.contains('_'),
        "both alphabets: {text}"
    );
    let ring = KeyRing::parse(&text).expect("a good file");
    let expected: Vec<String> = keys.iter().map(|k| KeyRing::kid_of(k)).collect();
    assert_eq!(ring.kids().collect::<Vec<_>>(), expected);
    assert_eq!(ring.current_kid(), expected[0]);
    // The same from a file, and as a comma-separated list (the environment variable's form).
    let path = key_file("good", &text);
    let from_file = KeyRing::from_file(&path).expect("the file reads");
    assert_eq!(from_file.kids().collect::<Vec<_>>(), expected);
    let list = format!(
        " {} ,{},,hex:{hex}",
        STANDARD.encode(keys[0]),
        URL_SAFE_NO_PAD.encode(keys[1])
    );
    let from_list = KeyRing::parse_list(&list).expect("a good list");
    assert_eq!(
        from_list.kids().collect::<Vec<_>>(),
        [expected[0].as_str(), &expected[1], &expected[3]]
    );
}

#[test]
fn bad_key_files_are_refused_naming_the_line_not_the_key() {
    let good = STANDARD.encode([5u8; 32]);
    let short = STANDARD.encode(b"sixteen byte key");
    let cases: [(String, &str, &str); 6] = [
        (format!("{good}\n{short}\n"), "line 2", "16 bytes"),
        (format!("# c\n\n{good}!\n"), "line 3", "not base64"),
        (format!("{good}\nhex:abc\n"), "line 2", "not hex"),
        (
            format!("{good}\nhex:zz{}\n", "00".repeat(31)),
            "line 2",
            "not hex",
        ),
        // Both alphabets in one key.
        (format!("{}-+\n", &good[..40]), "line 1", "not base64"),
        (format!("{}\n", "A".repeat(41)), "line 1", "not base64"),
    ];
    for (text, at, why) in cases {
        match KeyRing::parse(&text) {
            Err(KeyError::Invalid { at: got, why: said }) => {
                assert_eq!(got, at, "{text:?}");
                assert!(said.contains(why), "{text:?}: {said}");
                let message = KeyError::Invalid { at: got, why: said }.to_string();
                assert!(!message.contains(&good[..12]), "no key text: {message}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
    assert_eq!(
        KeyRing::parse("# nothing but comments\n\n").err(),
        Some(KeyError::NoKeys)
    );
    assert_eq!(KeyRing::parse_list(" , ").err(), Some(KeyError::NoKeys));
    assert_eq!(
        KeyRing::parse(&format!("{good}\n{good}\n")).err(),
        Some(KeyError::Duplicate {
            kid: KeyRing::kid_of(&[5u8; 32])
        })
    );
    let many: String = (0..=MAX_KEYS)
        .map(|i| {
            format!(
                "{}\n",
                STANDARD.encode([u8::try_from(i).expect("small"); 32])
            )
        })
        .collect();
    assert_eq!(KeyRing::parse(&many).err(), Some(KeyError::TooMany));
    assert_eq!(
        KeyRing::new([[1u8; 31]]).err(),
        Some(KeyError::TooShort { len: 31 })
    );
    assert_eq!(
        KeyRing::new(Vec::<Vec<u8>>::new()).err(),
        Some(KeyError::NoKeys)
    );

    // A file names itself and the line; a missing or oversized file is unreadable.
    let path = key_file("short", &format!("{good}\n{short}\n"));
    let message = KeyRing::from_file(&path).expect_err("short").to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("line 2"),
        "{message}"
    );
    assert!(!message.contains(&short), "{message}");
    let missing = path.with_file_name("no-such-file");
    assert!(matches!(
        KeyRing::from_file(&missing),
        Err(KeyError::Unreadable { .. })
    ));
    let huge = key_file(
        "huge",
        &"#".repeat(usize::try_from(MAX_KEY_FILE_LEN).expect("fits") + 1),
    );
    let message = KeyRing::from_file(&huge).expect_err("too long").to_string();
    assert!(message.contains("longer than"), "{message}");
}

#[test]
fn debug_shows_key_ids_never_keys() {
    let key = *b"a secret requestState key, 32 b!";
    let ring = KeyRing::new([key, [0x5a; 32]]).expect("two keys");
    let debug = format!(
        "{ring:?} {:?}",
        Server::builder().request_state_keys(ring.clone())
    );
    assert!(debug.contains(&KeyRing::kid_of(&key)), "{debug}");
    assert!(debug.contains(&KeyRing::kid_of(&[0x5a; 32])), "{debug}");
    for leak in [
        "secret".to_owned(),
        STANDARD.encode(key)[..12].to_owned(),
        "90, 90".to_owned(),
        "5a5a".to_owned(),
        "Wlpa".to_owned(),
    ] {
        assert!(!debug.contains(&leak), "{leak} in {debug}");
    }
    let server = node(Some(ring));
    let debug = format!("{server:?}");
    assert!(!debug.contains("secret"), "{debug}");
}
