//! TLS (feature `tls`): HTTP/1.1 and HTTP/2 on one port, chosen by ALPN; a session and a tool
//! call over each; a bad handshake does not disturb the listener.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use barrel_mcp::http::{HttpConfig, StreamableHttp, TlsConfig};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::initialize;
use crate::support::within;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

/// A TLS listener with the fixture certificate; the sender stops it.
async fn start() -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let tls = TlsConfig::from_pem_files(fixture("cert.pem"), fixture("key.pem")).expect("tls");
    start_with(tls).await
}

/// A TLS listener serving `tls`; the sender stops it.
async fn start_with(
    tls: TlsConfig,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (server, _) = crate::server::fixture::server();
    let http = StreamableHttp::new(server, HttpConfig::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        barrel_mcp::http::serve_tls(listener, http, tls, async {
            let _ = stopped.await;
        })
        .await
        .expect("serve_tls");
    });
    (addr, stop, task)
}

/// A TLS connection that trusts the fixture CA and offers `alpn`.
async fn connect(addr: SocketAddr, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
    connect_trusting(addr, alpn, &["ca.pem"]).await
}

/// A TLS connection that trusts the fixture certificates `roots` and offers `alpn`.
async fn connect_trusting(
    addr: SocketAddr,
    alpn: &[&[u8]],
    roots: &[&str],
) -> TlsStream<TcpStream> {
    let mut store = rustls::RootCertStore::empty();
    for root in roots {
        let der = CertificateDer::from_pem_file(fixture(root)).expect(root);
        store.add(der).expect("root");
    }
    let roots = store;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    within(TlsConnector::from(Arc::new(config)).connect(name, tcp))
        .await
        .expect("handshake")
}

fn negotiated(stream: &TlsStream<TcpStream>) -> Option<Vec<u8>> {
    stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec)
}

/// Either version's request sender.
enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    async fn open(stream: TlsStream<TcpStream>, h2: bool) -> Self {
        let io = TokioIo::new(stream);
        if h2 {
            let (sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                    .await
                    .expect("h2 handshake");
            tokio::spawn(connection);
            Self::H2(sender)
        } else {
            let (sender, connection) = hyper::client::conn::http1::handshake(io)
                .await
                .expect("h1 handshake");
            tokio::spawn(connection);
            Self::H1(sender)
        }
    }

    /// POSTs `message` (JSON answers only) and returns the status, session id and body.
    async fn post(
        &mut self,
        addr: SocketAddr,
        session: Option<&str>,
        message: &Value,
    ) -> (StatusCode, Option<String>, Bytes) {
        let authority = format!("localhost:{}", addr.port());
        let mut request = http::Request::builder()
            .method(Method::POST)
            .header("content-type", "application/json")
            .header("accept", "application/json");
        request = match self {
            // HTTP/2 carries the authority in the URI; HTTP/1.1 in Host.
            Self::H2(_) => request.uri(format!("https://{authority}/mcp")),
            Self::H1(_) => request.uri("/mcp").header("host", authority),
        };
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .expect("request");
        let response = match self {
            Self::H1(sender) => within(sender.send_request(request)).await,
            Self::H2(sender) => within(sender.send_request(request)).await,
        }
        .expect("response");
        assert_eq!(
            response.version(),
            if matches!(self, Self::H2(_)) {
                http::Version::HTTP_2
            } else {
                http::Version::HTTP_11
            }
        );
        let status = response.status();
        let session = super::session_id(response.headers());
        let body = within(response.into_body().collect())
            .await
            .expect("body")
            .to_bytes();
        (status, session, body)
    }
}

/// initialize, initialized, then `tools/call add`, all on one TLS connection.
async fn session_round_trip(addr: SocketAddr, h2: bool) {
    let alpn: &[&[u8]] = if h2 { &[b"h2"] } else { &[b"http/1.1"] };
    let stream = connect(addr, alpn).await;
    let expected: &[u8] = if h2 { b"h2" } else { b"http/1.1" };
    assert_eq!(negotiated(&stream).as_deref(), Some(expected));
    session_round_trip_on(addr, Sender::open(stream, h2).await).await;
}

/// initialize, initialized, then `tools/call add` through `sender`.
async fn session_round_trip_on(addr: SocketAddr, mut sender: Sender) {
    let (status, session, body) = sender.post(addr, None, &initialize(1)).await;
    assert_eq!(status, StatusCode::OK);
    let session = session.expect("Mcp-Session-Id");
    let answer: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );

    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let (status, _, _) = sender.post(addr, Some(&session), &initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                      "params":{"name":"add","arguments":{"a":2,"b":3}}});
    let (status, _, body) = sender.post(addr, Some(&session), &call).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(answer["result"]["structuredContent"]["sum"], 5, "{answer}");
}

#[tokio::test]
async fn http1_and_http2_share_the_port_through_alpn() {
    let (addr, stop, task) = start().await;
    session_round_trip(addr, false).await;
    session_round_trip(addr, true).await;
    // Offering both, the client gets HTTP/2, the server's first choice.
    let both = connect(addr, &[b"h2", b"http/1.1"]).await;
    assert_eq!(negotiated(&both).as_deref(), Some(&b"h2"[..]));
    drop(both);
    let _ = stop.send(());
    within(task).await.expect("join");
}

#[tokio::test]
async fn a_bad_handshake_does_not_disturb_the_listener() {
    let (addr, stop, task) = start().await;
    // Plain HTTP on the TLS port: the handshake fails and the connection is dropped.
    let mut plain = TcpStream::connect(addr).await.expect("connect");
    plain
        .write_all(b"GET /mcp HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .expect("write");
    let mut buf = Vec::new();
    let _ = within(tokio::io::AsyncReadExt::read_to_end(&mut plain, &mut buf)).await;
    assert!(!buf.starts_with(b"HTTP/1.1 200"), "no HTTP answer in clear");
    session_round_trip(addr, true).await;
    let _ = stop.send(());
    within(task).await.expect("join");
}

#[test]
fn pem_errors_name_the_problem() {
    let error = TlsConfig::from_pem_files(fixture("missing.pem"), fixture("key.pem"))
        .expect_err("missing file");
    assert!(error.to_string().contains("missing.pem"), "{error}");
    let cert = std::fs::read(fixture("cert.pem")).expect("cert");
    let other = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    assert!(TlsConfig::from_pem(&cert, other.as_bytes()).is_err());
    assert!(TlsConfig::from_pem(b"", b"").is_err());
    let key = std::fs::read(fixture("key.pem")).expect("key");
    let config = TlsConfig::from_pem(&cert, &key).expect("valid pair");
    assert_eq!(
        config.rustls().alpn_protocols,
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    );
}

/// The certificate the server presented on `stream`.
fn presented(stream: &TlsStream<TcpStream>) -> Vec<u8> {
    stream
        .get_ref()
        .1
        .peer_certificates()
        .expect("a certificate")[0]
        .to_vec()
}

fn der(name: &str) -> Vec<u8> {
    CertificateDer::from_pem_file(fixture(name))
        .expect(name)
        .to_vec()
}

#[tokio::test]
async fn a_reloaded_certificate_serves_new_connections_and_old_ones_go_on() {
    let tls = TlsConfig::from_pem_files(fixture("cert.pem"), fixture("key.pem")).expect("tls");
    let (addr, stop, task) = start_with(tls.clone()).await;
    let roots = ["ca.pem", "rotated-cert.pem"];
    let before = connect_trusting(addr, &[b"h2"], &roots).await;
    assert_eq!(presented(&before), der("cert.pem"));
    let mut old = Sender::open(before, true).await;

    // A bad pair changes nothing.
    assert!(
        tls.reload_pem_files(fixture("rotated-cert.pem"), fixture("key.pem"))
            .is_err()
    );
    let still = connect_trusting(addr, &[b"h2"], &roots).await;
    assert_eq!(presented(&still), der("cert.pem"));

    tls.reload_pem_files(fixture("rotated-cert.pem"), fixture("rotated-key.pem"))
        .expect("reload");
    let after = connect_trusting(addr, &[b"h2"], &roots).await;
    assert_eq!(presented(&after), der("rotated-cert.pem"));
    session_round_trip_on(addr, Sender::open(after, true).await).await;
    // The connection opened before the reload still serves.
    let (status, _, _) = old.post(addr, None, &initialize(1)).await;
    assert_eq!(status, StatusCode::OK);

    let _ = stop.send(());
    within(task).await.expect("join");
}
