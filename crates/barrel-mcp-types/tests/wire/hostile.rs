//! Hostile input: `jsonrpc::decode` over many generated and mutated frames never panics, and
//! every error it reports can be sent back (or is deliberately left unanswered).
//!
//! The generator is a fixed-seed xorshift, so every run checks the same frames; a failure names
//! the frame.

use barrel_mcp_types::jsonrpc::{self, Message};

/// A small deterministic pseudo-random source.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

/// Decodes `frame` and checks what came out is usable.
fn check(frame: &str) {
    match jsonrpc::decode(frame) {
        Ok(message) => {
            // What was read can be written again and read back the same.
            let again = jsonrpc::decode(&message.to_json())
                .unwrap_or_else(|e| panic!("re-encoding {frame:?} gave an unreadable {e:?}"));
            assert_eq!(again, message, "{frame:?}");
        }
        Err(error) => {
            if let Some(Message::Response(response)) = error.to_response() {
                assert!(response.outcome.is_err(), "{frame:?}");
            }
        }
    }
}

const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "\\",
    "\"jsonrpc\"",
    "\"2.0\"",
    "\"id\"",
    "\"method\"",
    "\"params\"",
    "\"result\"",
    "\"error\"",
    "\"code\"",
    "\"message\"",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e400",
    "9223372036854775808",
    "1.5",
    "\"x\"",
    " ",
    "\u{0}",
    "\u{fffd}",
    "é",
];

#[test]
fn generated_frames_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
        let len = rng.below(24);
        let frame: String = (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        check(&frame);
    }
}

#[test]
fn mutated_messages_never_panic() {
    let valid = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"hi"}}}"#,
        r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"x"}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":[1,2]}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}"#,
    ];
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for base in valid {
        check(base);
        let bytes: Vec<char> = base.chars().collect();
        for _ in 0..5_000 {
            let mut mutated = bytes.clone();
            for _ in 0..=rng.below(3) {
                let at = rng.below(mutated.len());
                match rng.below(3) {
                    0 => {
                        mutated.remove(at);
                    }
                    1 => mutated.insert(
                        at,
                        PIECES[rng.below(PIECES.len())]
                            .chars()
                            .next()
                            .unwrap_or('x'),
                    ),
                    _ => mutated[at] = char::from(b' ' + u8::try_from(rng.below(95)).unwrap_or(0)),
                }
                if mutated.is_empty() {
                    break;
                }
            }
            let frame: String = mutated.into_iter().collect();
            check(&frame);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(jsonrpc::decode(&deep).is_err());
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{}1{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(
        jsonrpc::decode(&deep_params).is_err(),
        "serde_json's depth limit holds"
    );
}
