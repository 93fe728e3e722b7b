//! Sessions: status codes, the session id, `MCP-Protocol-Version`, DELETE, the cap, the idle
//! TTL, the initialization timeout and binding to a principal.

use std::time::Duration;

use barrel_mcp::http::{HttpConfig, PrincipalResolver};
use http::{Method, StatusCode};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Client, SseReader, TestServer, body_json, initialize, session_id};

#[tokio::test]
async fn lifecycle_status_codes() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client();
    let result = client.initialize().await;
    assert_eq!(result["result"]["protocolVersion"], "2025-11-25");
    let id = client.session.clone().expect("session");
    assert!(
        id.len() >= 22 && id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{id}"
    );

    // JSON when the client takes only JSON.
    let tools = client.call_json(2, "tools/list", json!({})).await;
    assert!(tools["result"]["tools"].is_array());

    // A request without the session id: 400; with an unknown one: 404.
    let mut anonymous = client.clone();
    anonymous.session = None;
    let ping = json!({"jsonrpc":"2.0","id":3,"method":"ping"});
    assert_eq!(
        anonymous.post(&ping).await.status(),
        StatusCode::BAD_REQUEST
    );
    anonymous.session = Some("not-a-session".into());
    assert_eq!(anonymous.post(&ping).await.status(), StatusCode::NOT_FOUND);

    // MCP-Protocol-Version: any sessionful revision passes, an unknown one is 400.
    let old = client
        .post_with(&ping, &[("mcp-protocol-version", "2025-03-26")])
        .await;
    assert_eq!(old.status(), StatusCode::OK);
    let bogus = client
        .post_with(&ping, &[("mcp-protocol-version", "1999-01-01")])
        .await;
    assert_eq!(bogus.status(), StatusCode::BAD_REQUEST);

    // A second initialize in the session is refused in-band, the session lives on.
    let again = client.post(&initialize(4)).await;
    let error = SseReader::new(again).next_message().await;
    assert_eq!(error["error"]["code"], -32600);

    // Duplicate in-flight id: the second POST gets 400.
    let slow = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}});
    let first = client.post(&slow).await;
    assert_eq!(first.status(), StatusCode::OK);
    let duplicate = client.post(&slow).await;
    assert_eq!(duplicate.status(), StatusCode::BAD_REQUEST);

    // Unsupported methods on the endpoint.
    assert_eq!(
        client.send(Method::PUT, &[], None).await.status(),
        StatusCode::METHOD_NOT_ALLOWED
    );

    // DELETE ends the session: 200, then 404 for everything.
    assert_eq!(
        client.send(Method::DELETE, &[], None).await.status(),
        StatusCode::OK
    );
    assert_eq!(client.post(&ping).await.status(), StatusCode::NOT_FOUND);
    let get = client
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        client.send(Method::DELETE, &[], None).await.status(),
        StatusCode::NOT_FOUND
    );
    drop(first);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.http.session_count(), 0);
}

/// The fixture server (to look at its sessions), served over HTTP, and a client without a
/// session.
async fn fixture_served() -> (barrel_mcp::server::Server, TestServer, Client) {
    let (server, _) = crate::server::fixture::server();
    let http = TestServer::start_with(server.clone(), HttpConfig::default()).await;
    let mut client = http.client();
    client.session = None;
    (server, http, client)
}

#[tokio::test]
async fn the_session_holds_what_its_initialize_declared() {
    // The endpoint reads `initialize` before it creates a session, and the server takes what
    // it read: the negotiated revision, the client's capabilities and self-description.
    let (server, _http, client) = fixture_served().await;
    let opening = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18",
        "capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"declared","version":"7.1"}}});
    let response = client.post(&opening).await;
    assert_eq!(response.status(), StatusCode::OK);
    let handles = server.live_sessions();
    assert_eq!(handles.len(), 1);
    let session = &handles[0];
    assert_eq!(
        session.protocol_version(),
        barrel_mcp::types::ProtocolVersion::V2025_06_18
    );
    assert_eq!(
        (
            session.client_info().name.as_str(),
            session.client_info().version.as_str()
        ),
        ("declared", "7.1")
    );
    let roots = session.client_capabilities().roots.as_ref();
    assert_eq!(roots.and_then(|roots| roots.list_changed), Some(true));
    assert!(session.client_capabilities().sampling.is_none());
}

#[tokio::test]
async fn an_opening_initialize_the_peer_refuses_ends_its_session() {
    // An id past `max_request_id_length` (256) is refused before the server reads the
    // request: the session opened for it ends with the refusal, and none is registered.
    let (server, http, mut client) = fixture_served().await;
    let mut opening = initialize(1);
    opening["id"] = json!("x".repeat(300));
    let response = client.post(&opening).await;
    assert_eq!(response.status(), StatusCode::OK);
    client.session = session_id(response.headers());
    let refusal = SseReader::new(response).next_message().await;
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    for _ in 0..100 {
        if http.http.session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(http.http.session_count(), 0);
    assert!(server.live_sessions().is_empty());
    let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    assert_eq!(client.post(&ping).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn sessionless_get_and_delete() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let get = client
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let lost = client
        .send(
            Method::DELETE,
            &[("mcp-protocol-version", "2025-11-25")],
            None,
        )
        .await;
    assert_eq!(lost.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn session_cap_answers_503() {
    let config = HttpConfig {
        max_sessions: 2,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    for _ in 0..2 {
        server.client().initialize().await;
    }
    let refused = server.client().post(&initialize(1)).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    assert!(session_id(refused.headers()).is_none());
    assert_eq!(server.http.session_count(), 2);
}

#[tokio::test]
async fn idle_sessions_and_uninitialized_ones_expire() {
    let config = HttpConfig {
        session_idle_timeout: Duration::from_millis(300),
        init_timeout: Duration::from_millis(200),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut idle = server.client();
    idle.initialize().await;
    // Never sends notifications/initialized.
    let mut lazy = server.client();
    let response = lazy.post(&initialize(1)).await;
    lazy.session = session_id(response.headers());
    drop(response);
    assert_eq!(server.http.session_count(), 2);

    // Activity keeps a session alive past its TTL.
    let ping = json!({"jsonrpc":"2.0","id":9,"method":"ping"});
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert_eq!(
            idle.call_json(9, "ping", json!({})).await["result"],
            json!({})
        );
    }
    assert_eq!(lazy.post(&ping).await.status(), StatusCode::NOT_FOUND);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(idle.post(&ping).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn sessions_are_bound_to_their_principal() {
    let config = HttpConfig {
        principal: Some(PrincipalResolver::new(|parts| {
            parts
                .headers
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let client = server.client();
    let response = client
        .post_with(&initialize(1), &[("x-user", "alice")])
        .await;
    let mut alice = client.clone();
    alice.session = session_id(response.headers());
    drop(response);
    let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    let mallory = alice.post_with(&ping, &[("x-user", "mallory")]).await;
    assert_eq!(mallory.status(), StatusCode::NOT_FOUND);
    let anonymous = alice.post(&ping).await;
    assert_eq!(anonymous.status(), StatusCode::NOT_FOUND);
    let delete = alice
        .send(Method::DELETE, &[("x-user", "mallory")], None)
        .await;
    assert_eq!(delete.status(), StatusCode::NOT_FOUND);
    let own = alice
        .send(
            Method::POST,
            &[
                ("x-user", "alice"),
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
            Some(&ping.to_string()),
        )
        .await;
    assert_eq!(own.status(), StatusCode::OK);
    assert_eq!(body_json(own).await["result"], json!({}));
}

#[tokio::test]
async fn a_malformed_initialize_is_refused_before_a_session_exists() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let bad = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize"}),
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}),
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":"not an object"}}),
    ];
    for message in bad {
        let response = client.post(&message).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{message}");
        assert!(session_id(response.headers()).is_none(), "{message}");
        let body = body_json(response).await;
        assert_eq!(body["id"], 1, "{body}");
        assert_eq!(body["error"]["code"], -32602, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("invalid params")),
            "{body}"
        );
    }
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn a_running_request_nobody_waits_for_does_not_keep_its_session() {
    // The server learns that a reader has gone when a write fails: keep-alive comments every
    // 100 ms make that quick.
    let config = HttpConfig {
        session_idle_timeout: Duration::from_millis(300),
        keep_alive: Duration::from_millis(100),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut client = server.client();
    client.initialize().await;
    let slow = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                      "params":{"name":"slow","arguments":{}}});

    // While the client reads the call's stream, the session outlives its TTL...
    let mut socket = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let body = slow.to_string();
    let session = client.session.clone().expect("session");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
         content-length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut head = [0u8; 64];
    let read = crate::support::within(socket.read(&mut head))
        .await
        .expect("read");
    assert!(
        head[..read].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        &head[..read]
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(server.http.session_count(), 1);

    // ...and once it has gone, the handler still running does not keep it.
    drop(socket);
    crate::support::within(async {
        while server.http.session_count() > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let ping = json!({"jsonrpc":"2.0","id":3,"method":"ping"});
    assert_eq!(client.post(&ping).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn one_principal_cannot_take_every_session() {
    let config = HttpConfig {
        principal: Some(PrincipalResolver::new(|parts| {
            parts
                .headers
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })),
        max_sessions: 4,
        max_sessions_per_principal: 2,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let client = server.client();
    let open = |user: &'static str| {
        let client = client.clone();
        async move {
            let response = client.post_with(&initialize(1), &[("x-user", user)]).await;
            (
                response.status(),
                response.headers().get("retry-after").cloned(),
            )
        }
    };
    let first = client
        .post_with(&initialize(1), &[("x-user", "mallory")])
        .await;
    assert_eq!(first.status(), StatusCode::OK);
    let first_id = first
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    drop(first);
    assert_eq!(open("mallory").await.0, StatusCode::OK);
    let (status, retry) = open("mallory").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(retry.is_some());
    // Others still get theirs; anonymous clients (no principal) are not capped per principal.
    assert_eq!(open("alice").await.0, StatusCode::OK);
    let anonymous = client.post(&initialize(1)).await;
    assert_eq!(anonymous.status(), StatusCode::OK);
    assert_eq!(server.http.session_count(), 4);
    // Deleting one of mallory's sessions gives its share back.
    let mallorys = Client {
        addr: client.addr,
        session: Some(first_id),
    };
    let deleted = mallorys
        .send(Method::DELETE, &[("x-user", "mallory")], None)
        .await;
    assert_eq!(deleted.status(), StatusCode::OK);
    assert_eq!(open("mallory").await.0, StatusCode::OK);
}

#[tokio::test]
async fn one_anonymous_address_cannot_take_every_session() {
    use tower::ServiceExt;
    let config = HttpConfig {
        max_sessions: 8,
        max_anonymous_sessions_per_address: 2,
        ..HttpConfig::default()
    };
    let (fixture, _) = crate::server::fixture::server();
    let http = barrel_mcp::http::StreamableHttp::new(fixture, config);
    let from = |ip: [u8; 4], method: Method, path: &str, body: String| {
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(axum::body::Body::from(body))
            .expect("request");
        let address = std::net::SocketAddr::from((ip, 40000));
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(address));
        http.router().oneshot(request)
    };
    let open = |ip: [u8; 4]| from(ip, Method::POST, "/mcp", initialize(1).to_string());
    let status = |response: Result<axum::response::Response, std::convert::Infallible>| {
        response.expect("infallible").status()
    };
    let mallory = [203, 0, 113, 7];
    assert_eq!(status(open(mallory).await), StatusCode::OK);
    assert_eq!(status(open(mallory).await), StatusCode::OK);
    // A third from the same address: 429, on the main endpoint and on the legacy one.
    let third = open(mallory).await.expect("infallible");
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers().contains_key("retry-after"));
    let legacy = from(mallory, Method::GET, "/sse", String::new()).await;
    assert_eq!(status(legacy), StatusCode::TOO_MANY_REQUESTS);
    // Other addresses get theirs, and loopback (shared by every local process) is not capped.
    assert_eq!(status(open([198, 51, 100, 1]).await), StatusCode::OK);
    for _ in 0..3 {
        assert_eq!(status(open([127, 0, 0, 1]).await), StatusCode::OK);
    }
    assert_eq!(http.session_count(), 6);
}

#[tokio::test]
async fn a_session_handle_speaks_on_the_sessions_get_stream() {
    use std::sync::{Arc, Mutex};

    use barrel_mcp::server::{Ctx, Server, SessionHandle};
    use barrel_mcp::types::LoggingLevel;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    let kept: Arc<Mutex<Option<SessionHandle>>> = Arc::default();
    let slot = Arc::clone(&kept);
    let server = Server::builder()
        .name("handles", "1.0.0")
        .tool("keep", "Keeps the session", move |ctx: Ctx, _: NoArgs| {
            let slot = Arc::clone(&slot);
            async move {
                *slot.lock().expect("slot") = ctx.session();
                Ok("kept")
            }
        })
        .build()
        .expect("server");
    let server = TestServer::start_with(server, HttpConfig::default()).await;
    let mut alice = server.client();
    alice.initialize().await;
    let mut bob = server.client();
    bob.initialize().await;
    let stream = |client: &super::Client| {
        let client = client.clone();
        async move {
            let response = client
                .send(Method::GET, &[("accept", "text/event-stream")], None)
                .await;
            assert_eq!(response.status(), StatusCode::OK);
            SseReader::new(response)
        }
    };
    let mut alice_stream = stream(&alice).await;
    let mut bob_stream = stream(&bob).await;
    let keep = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"keep","arguments":{}}});
    SseReader::new(alice.post(&keep).await).next_message().await;
    let handle = kept.lock().expect("slot").take().expect("kept");
    handle
        .log(LoggingLevel::Info, "from the background")
        .await
        .expect("log");
    let note = alice_stream.next_message().await;
    assert_eq!(note["method"], "notifications/message");
    assert_eq!(note["params"]["data"], "from the background");
    // Bob's stream carries its priming event and nothing else.
    let heard = tokio::time::timeout(Duration::from_millis(200), async {
        loop {
            match bob_stream.next_event().await {
                Some(event) if event.data.is_empty() => continue,
                other => break other,
            }
        }
    })
    .await;
    assert!(heard.is_err(), "bob heard {heard:?}");
}

#[tokio::test]
async fn an_initialize_the_peer_refuses_ends_its_session() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client();
    // An id longer than the peer takes: refused before the server sees the request.
    let long_id = "x".repeat(300);
    let mut message = initialize(1);
    message["id"] = json!(long_id);
    let response = client.post(&message).await;
    let id = session_id(response.headers()).expect("the session was opened");
    let answer = SseReader::new(response).next_message().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // The server told the session its initialize was refused: it is gone at once, not
    // after the initialization timeout.
    client.session = Some(id);
    let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    let mut status = StatusCode::OK;
    for _ in 0..50 {
        status = client.post(&ping).await.status();
        if status == StatusCode::NOT_FOUND {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, StatusCode::NOT_FOUND);
}
