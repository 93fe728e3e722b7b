//! Building blocks of HTTP answers and request checks shared by both eras: JSON-RPC error
//! bodies with a status, the `Accept` and `Content-Type` rules, and reading a bounded body.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use barrel_mcp_types::jsonrpc::{DecodeError, Members};
use barrel_mcp_types::{ErrorCode, ErrorObject, Message, RequestId};
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{HeaderName, StatusCode};
use http_body_util::BodyExt;

/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (2026-07-28).
pub(crate) const METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (2026-07-28).
pub(crate) const NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `Last-Event-ID`.
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// A JSON-RPC error object with a raw code.
pub(crate) fn rpc_error(code: i32, message: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode(code), message)
}

/// A response with `status` and a JSON-RPC error body (id `null` when `id` is `None`).
pub(crate) fn error(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response {
    let message = Message::Response(barrel_mcp_types::Response::error(id, error));
    json(status, &message)
}

/// A response with `status` and one JSON-RPC message as its body.
pub(crate) fn json(status: StatusCode, message: &Message) -> Response {
    json_text(status, message.to_json())
}

/// A JSON body already serialized (`text` is one JSON-RPC message).
pub(crate) fn json_text(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An empty response with `status`.
pub(crate) fn empty(status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

/// 405 with the methods that are allowed.
pub(crate) fn method_not_allowed(allow: &'static str) -> Response {
    let mut response = empty(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// A response whose body is an SSE stream.
pub(crate) fn event_stream(body: Body) -> Response {
    let mut response = Response::new(body);
    // Copied from a map built once: three inserts into an empty map (its first allocation,
    // three name hashes) cost ~600 instructions more, over 1% of a call.
    *response.headers_mut() = event_stream_headers().clone();
    response
}

/// The head of every SSE response, with room left for `Mcp-Session-Id` and CORS headers.
fn event_stream_headers() -> &'static HeaderMap {
    static HEADERS: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
    HEADERS.get_or_init(|| {
        let mut headers = HeaderMap::with_capacity(8);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
        headers
    })
}

/// Which response formats the client takes, from `Accept`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

/// Both formats.
const BOTH: Accepts = Accepts {
    json: true,
    sse: true,
};

/// The `Accept` values clients send most (the official SDKs' among them), and what each takes.
const USUAL_ACCEPT: [(&[u8], Accepts); 3] = [
    (b"application/json, text/event-stream", BOTH),
    (b"application/json,text/event-stream", BOTH),
    (
        b"application/json",
        Accepts {
            json: true,
            sse: false,
        },
    ),
];

impl Accepts {
    /// A missing `Accept`, or `*/*`, takes both.
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let mut accepts = Accepts {
            json: false,
            sse: false,
        };
        let values = headers.get_all(header::ACCEPT);
        let mut each = values.iter();
        match (each.next(), each.next()) {
            (None, _) => return BOTH,
            // A usual value is taken whole: read item by item it cost ~750 instructions, 2% of
            // a whole call.
            (Some(value), None) => {
                let usual = USUAL_ACCEPT
                    .iter()
                    .find(|(usual, _)| *usual == value.as_bytes());
                if let Some((_, accepts)) = usual {
                    return *accepts;
                }
            }
            _ => {}
        }
        for value in values {
            // Visible ASCII only (else the value is skipped), then read as bytes: a header is
            // a few dozen of them, which a byte loop splits faster than `str` patterns do.
            if value.to_str().is_err() {
                continue;
            }
            for item in value.as_bytes().split(|&b| b == b',') {
                let media = item.split(|&b| b == b';').next().unwrap_or_default();
                let media = media.trim_ascii();
                if media.eq_ignore_ascii_case(b"application/json")
                    || media.eq_ignore_ascii_case(b"application/*")
                {
                    accepts.json = true;
                }
                if media.eq_ignore_ascii_case(b"text/event-stream")
                    || media.eq_ignore_ascii_case(b"text/*")
                {
                    accepts.sse = true;
                }
                if media == b"*/*" {
                    accepts.json = true;
                    accepts.sse = true;
                }
            }
        }
        accepts
    }
}

/// 415 unless the body is declared `application/json`.
pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), Response> {
    // Visible ASCII only, then read as bytes (as `Accepts::of` does): a `str` pattern search
    // and a Unicode trim cost more than the header is long.
    let json = headers.get(header::CONTENT_TYPE).is_some_and(|value| {
        // What nearly every client sends, taken without splitting it.
        if value.as_bytes() == b"application/json" {
            return true;
        }
        let media = value.as_bytes().split(|&b| b == b';').next();
        value.to_str().is_ok()
            && media
                .is_some_and(|media| media.trim_ascii().eq_ignore_ascii_case(b"application/json"))
    });
    if json {
        Ok(())
    } else {
        Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            rpc_error(-32600, "Content-Type must be application/json"),
        ))
    }
}

/// Reads the body as one JSON-RPC frame: the limits of [`read_body`], then -32700 (400) for
/// text that is not JSON and -32600 (400) for a batch or JSON that is not an object. What the
/// frame's members say is checked once, by [`Members::decode`].
pub(crate) async fn read_frame(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Members, Response> {
    let bytes = read_body(headers, body, limit, timeout).await?;
    Members::read(&bytes).map_err(|e| {
        let e = DecodeError::from(e);
        error(StatusCode::BAD_REQUEST, e.id, e.error)
    })
}

/// Reads the whole body, refusing more than `limit` bytes (413, checked against
/// `Content-Length` before reading and again while reading) or a body slower than `timeout`
/// (408).
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, Response> {
    let too_large = || {
        let mut response = error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            rpc_error(-32600, "request body too large"),
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    let collect = whole(http_body_util::Limited::new(body, limit));
    tokio::pin!(collect);
    // A small body is usually in hand with the head: read it before arming the timer.
    let read = match std::future::poll_fn(|cx| Poll::Ready(collect.as_mut().poll(cx))).await {
        Poll::Ready(read) => read,
        Poll::Pending => match tokio::time::timeout(timeout, collect).await {
            Ok(read) => read,
            Err(_) => {
                return Err(error(
                    StatusCode::REQUEST_TIMEOUT,
                    None,
                    rpc_error(-32600, "request body too slow"),
                ));
            }
        },
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(_) => Err(error(
            StatusCode::BAD_REQUEST,
            None,
            rpc_error(-32600, "could not read the request body"),
        )),
    }
}

/// A body's data in one buffer. A body that came in one frame (what a small request usually
/// is) is handed on as it came, without a list of frames around it; frames after the first
/// are joined into a buffer sized from the body's own size hint (bounded: `Content-Length` was
/// checked against the limit).
async fn whole<B>(body: B) -> Result<Bytes, B::Error>
where
    B: hyper::body::Body<Data = Bytes>,
{
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        // Trailers carry nothing an MCP request reads.
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            None => joined.extend_from_slice(&data),
            Some(earlier) => {
                let hinted = usize::try_from(body.size_hint().lower()).unwrap_or(0);
                joined.reserve(earlier.len() + data.len() + hinted);
                joined.extend_from_slice(&earlier);
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(match first {
        Some(only) => only,
        None => Bytes::from(joined),
    })
}

/// The HTTP status of a 2026-07-28 error answer sent as JSON: 404 for an unknown method, 400
/// for the transport-level errors, 200 for the rest (in-band).
pub(crate) fn status_of(error: &ErrorObject) -> StatusCode {
    match error.code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    use std::convert::Infallible;

    /// A body that yields these frames, then ends.
    type Frames = StreamBody<
        futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>,
    >;

    fn frames(parts: Vec<Frame<Bytes>>) -> Frames {
        StreamBody::new(futures_util::stream::iter(
            parts.into_iter().map(Ok).collect::<Vec<_>>(),
        ))
    }

    #[test]
    fn accept_lists_are_read_item_by_item() {
        let cases: [(&[&[u8]], bool, bool); 15] = [
            (&[], true, true),
            (&[b"application/json, text/event-stream"], true, true),
            (&[b"application/json,text/event-stream"], true, true),
            (&[b"application/json, text/event-stream", b""], true, true),
            (&[b"", b"application/json, text/event-stream"], true, true),
            (&[b"text/event-stream;q=0.9 ,Application/JSON"], true, true),
            (&[b"application/json"], true, false),
            (&[b"application/json", b"text/event-stream"], true, true),
            (&[b"text/*"], false, true),
            (&[b"application/*;q=1"], true, false),
            (&[b"*/*"], true, true),
            (&[b"text/html, application/xml"], false, false),
            (&[b"application/jsonx, text/event-streams"], false, false),
            (&[b""], false, false),
            // Not visible ASCII: the value is skipped, as if absent but counted.
            (&[b"application/json\xff"], false, false),
        ];
        for (values, json, sse) in cases {
            let mut headers = HeaderMap::new();
            for value in values {
                let value = HeaderValue::from_bytes(value).expect("a header value");
                headers.append(header::ACCEPT, value);
            }
            let accepts = Accepts::of(&headers);
            assert_eq!((accepts.json, accepts.sse), (json, sse), "{values:?}");
        }
    }

    #[test]
    fn an_event_stream_is_not_cached_nor_buffered_and_takes_more_headers() {
        let mut response = event_stream(Body::empty());
        response
            .headers_mut()
            .insert(SESSION_ID, HeaderValue::from_static("abc"));
        let headers: Vec<(&str, &[u8])> = response
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
            .collect();
        assert_eq!(
            headers,
            [
                ("content-type", &b"text/event-stream"[..]),
                ("cache-control", b"no-cache"),
                ("x-accel-buffering", b"no"),
                ("mcp-session-id", b"abc"),
            ]
        );
        // The next response starts from the same three.
        assert_eq!(event_stream(Body::empty()).headers().len(), 3);
    }

    #[test]
    fn only_a_json_body_is_taken() {
        let cases: [(Option<&[u8]>, bool); 9] = [
            (Some(b"application/json"), true),
            (Some(b"Application/JSON; charset=utf-8"), true),
            (Some(b" application/json ;x=1"), true),
            (Some(b"application/json;"), true),
            (Some(b"application/jsonx"), false),
            (Some(b"text/plain; application/json"), false),
            (Some(b""), false),
            // Not visible ASCII anywhere: refused, parameters included.
            (Some(b"application/json; x=\xff"), false),
            (None, false),
        ];
        for (value, taken) in cases {
            let mut headers = HeaderMap::new();
            if let Some(value) = value {
                let value = HeaderValue::from_bytes(value).expect("a header value");
                headers.insert(header::CONTENT_TYPE, value);
            }
            let status = check_content_type(&headers).map_err(|refused| refused.status());
            let expected = if taken {
                Ok(())
            } else {
                Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
            };
            assert_eq!(status, expected, "{value:?}");
        }
    }

    #[tokio::test]
    async fn a_body_in_one_frame_is_handed_on_as_it_came() {
        let only = Bytes::from_static(b"{\"jsonrpc\":\"2.0\"}");
        let read = whole(frames(vec![Frame::data(only.clone())]))
            .await
            .expect("read");
        assert_eq!(read, only);
        assert_eq!(read.as_ptr(), only.as_ptr(), "not copied");
    }

    #[tokio::test]
    async fn frames_are_joined_in_order_and_trailers_skipped() {
        let mut trailers = HeaderMap::new();
        trailers.insert("x-t", HeaderValue::from_static("1"));
        let cases: Vec<(Vec<&'static [u8]>, &[u8])> = vec![
            (vec![b"ab", b"cd", b"ef"], b"abcdef"),
            (vec![b"", b"ab"], b"ab"),
            (vec![b"", b""], b""),
            (vec![], b""),
        ];
        for (parts, expected) in cases {
            let mut body: Vec<Frame<Bytes>> = parts
                .iter()
                .map(|p| Frame::data(Bytes::from_static(p)))
                .collect();
            body.push(Frame::trailers(trailers.clone()));
            let read = whole(frames(body)).await.expect("read");
            assert_eq!(&read[..], expected, "{parts:?}");
        }
    }

    #[tokio::test]
    async fn a_body_over_the_limit_fails_while_it_is_read() {
        let body = frames(vec![
            Frame::data(Bytes::from_static(b"12345")),
            Frame::data(Bytes::from_static(b"6789")),
        ]);
        let error = whole(http_body_util::Limited::new(body, 8))
            .await
            .expect_err("over the limit");
        assert!(error.is::<http_body_util::LengthLimitError>());
    }
}
