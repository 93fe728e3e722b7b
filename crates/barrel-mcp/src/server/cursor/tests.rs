//! Tests of cursor encoding, decoding and pagination.

use super::*;

#[test]
fn round_trips() {
    for (offset, fingerprint) in [(0, 0), (1, 7), (100, u64::MAX), (usize::MAX, 42)] {
        let text = encode_cursor(offset, fingerprint);
        assert!(text.len() <= MAX_CURSOR_LEN);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(
            decode_cursor(&text),
            Ok(Cursor {
                offset,
                fingerprint
            })
        );
    }
}

#[test]
fn garbage_is_malformed() {
    let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
    let cases = [
        String::new(),
        "!!!".into(),
        "YQ=".into(),
        "x".repeat(MAX_CURSOR_LEN + 1),
        b64("c1:1"),
        b64("c1:1:2:3"),
        b64("c2:1:2"),
        b64("c1::2"),
        b64("c1:1:"),
        b64("c1:-1:2"),
        b64("c1:+1:2"),
        b64("c1:01:2"),
        b64("c1: 1:2"),
        b64("c1:1:99999999999999999999999"),
        b64("c1:１:2"),
        URL_SAFE_NO_PAD.encode([0xff, 0xfe, b':']),
    ];
    for cursor in &cases {
        assert_eq!(
            decode_cursor(cursor),
            Err(CursorError::Malformed),
            "{cursor:.40}"
        );
    }
}

#[test]
fn pages_through_a_list() {
    let items: Vec<u32> = (0..7).collect();
    let (page, next) = paginate(&items, None, 3, 9).expect("first page");
    assert_eq!(page, [0, 1, 2]);
    let next = next.expect("more");
    let (page, next) = paginate(&items, Some(&next), 3, 9).expect("second page");
    assert_eq!(page, [3, 4, 5]);
    let (page, next) = paginate(&items, next.as_deref(), 3, 9).expect("last page");
    assert_eq!(page, [6]);
    assert_eq!(next, None);
}

#[test]
fn exact_multiple_ends_without_a_cursor() {
    let items = [1, 2, 3, 4];
    let (page, next) = paginate(&items, None, 2, 0).expect("first");
    assert_eq!(page, [1, 2]);
    let (page, next) = paginate(&items, next.as_deref(), 2, 0).expect("second");
    assert_eq!(page, [3, 4]);
    assert_eq!(next, None);
}

#[test]
fn page_size_zero_means_everything() {
    let items = ["a", "b", "c"];
    assert_eq!(paginate(&items, None, 0, 1), Ok((items.to_vec(), None)));
    let from_one = encode_cursor(1, 1);
    assert_eq!(
        paginate(&items, Some(&from_one), 0, 1),
        Ok((vec!["b", "c"], None))
    );
    assert_eq!(paginate(&items, None, 10, 1), Ok((items.to_vec(), None)));
}

#[test]
fn empty_lists() {
    let items: [u8; 0] = [];
    assert_eq!(paginate(&items, None, 5, 0), Ok((Vec::new(), None)));
    assert_eq!(
        paginate(&items, Some(&encode_cursor(0, 0)), 5, 0),
        Ok((Vec::new(), None))
    );
}

#[test]
fn refuses_stale_and_out_of_range_cursors() {
    let items = [1, 2, 3];
    assert_eq!(
        paginate(&items, Some(&encode_cursor(1, 5)), 1, 6),
        Err(CursorError::Stale)
    );
    assert_eq!(
        paginate(&items, Some(&encode_cursor(3, 5)), 1, 5),
        Err(CursorError::OutOfRange)
    );
    assert_eq!(
        paginate(&items, Some(&encode_cursor(usize::MAX, 5)), 1, 5),
        Err(CursorError::OutOfRange)
    );
    assert_eq!(
        paginate(&items, Some("garbage!"), 1, 5),
        Err(CursorError::Malformed)
    );
    assert_eq!(
        CursorError::Stale.to_string(),
        "invalid cursor: the list has changed"
    );
}
