//! The HTTP client transports over `https://` (features `http-client-tls` and `tls`): against
//! `barrel_mcp::http::serve_tls` with the fixture certificate, whose test CA is added as an
//! extra root; an untrusted issuer fails with a TLS error; HTTP/2 and HTTP/1.1 each as ALPN
//! picks, checked by a strict server that speaks only the negotiated version.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use barrel_mcp::Error;
use barrel_mcp::client::Client;
use barrel_mcp::http::{HttpConfig, StreamableHttp, TlsConfig};
use barrel_mcp::transport::http_client::{HttpClientTransport, LegacySseTransport};
use barrel_mcp::types::{CallToolParams, ContentBlock, ProtocolVersion};
use http::Version;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::{builder, modes};
use crate::support::within;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

fn tls() -> TlsConfig {
    TlsConfig::from_pem_files(fixture("cert.pem"), fixture("key.pem")).expect("tls")
}

/// `serve_tls` with the fixture server and certificate; the sender stops it.
async fn start() -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (server, _) = crate::server::fixture::server();
    let http = StreamableHttp::new(server, HttpConfig::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        barrel_mcp::http::serve_tls(listener, http, tls(), async {
            let _ = stopped.await;
        })
        .await
        .expect("serve_tls");
    });
    (addr, stop, task)
}

/// `add` with 2 and 3 must answer 5.
async fn add(client: &Client) {
    let args = json!({"a": 2, "b": 3})
        .as_object()
        .cloned()
        .expect("object");
    let sum = within(client.call_tool(CallToolParams::new("add").with_arguments(args)))
        .await
        .expect("add");
    // Revisions before 2025-06-18 carry the result as text only.
    let text = match &sum.content[..] {
        [ContentBlock::Text(text)] => serde_json::from_str(&text.text).ok(),
        _ => None,
    };
    assert_eq!(text, Some(json!({"sum": 5})), "{sum:?}");
}

#[tokio::test]
async fn streamable_http_over_https_in_every_revision() {
    let (addr, stop, task) = start().await;
    // The certificate names both `localhost` and `127.0.0.1`.
    for host in ["localhost", "127.0.0.1"] {
        for mode in modes() {
            let url = format!("https://{host}:{}/mcp", addr.port());
            let transport = HttpClientTransport::new(&url)
                .expect("url")
                .add_root_certificates_file(fixture("ca.pem"))
                .expect("ca.pem");
            let client = within(builder(mode).connect_http(transport))
                .await
                .unwrap_or_else(|e| panic!("{host} {mode:?}: {e}"));
            assert_eq!(
                client.protocol_version(),
                mode.unwrap_or(ProtocolVersion::LATEST)
            );
            add(&client).await;
            client.close();
        }
    }
    let _ = stop.send(());
    within(task).await.expect("join");
}

#[tokio::test]
async fn the_legacy_sse_client_over_https() {
    let (addr, stop, task) = start().await;
    let pem = std::fs::read(fixture("ca.pem")).expect("ca.pem");
    let url = format!("https://localhost:{}/sse", addr.port());
    let transport = LegacySseTransport::new(&url)
        .expect("url")
        .add_root_certificates(&pem)
        .expect("pem");
    let client = within(
        builder(Some(ProtocolVersion::V2024_11_05))
            .fallback_on_probe_timeout(false)
            .connect(transport),
    )
    .await
    .expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
    add(&client).await;
    client.close();
    let _ = stop.send(());
    within(task).await.expect("join");
}

/// Connecting fails with an `Error::Http` without a status whose text names the TLS problem.
async fn refused(transport: HttpClientTransport) -> String {
    let error = within(builder(None).connect_http(transport))
        .await
        .expect_err("an untrusted certificate");
    match &error {
        Error::Http(http) => {
            assert_eq!(http.status, None, "{error}");
            assert!(!http.is_auth());
        }
        other => panic!("not an HTTP error: {other:?}"),
    }
    error.to_string()
}

#[tokio::test]
async fn an_untrusted_issuer_is_a_clear_tls_error() {
    let (addr, stop, task) = start().await;
    let url = format!("https://localhost:{}/mcp", addr.port());

    // Mozilla's roots alone do not know the test CA.
    let text = refused(HttpClientTransport::new(&url).expect("url")).await;
    assert!(
        text.contains("TLS handshake with localhost failed"),
        "{text}"
    );
    assert!(text.contains("UnknownIssuer"), "{text}");

    // Trusting the wrong certificate (the leaf itself, not its issuer) does not help.
    let wrong = HttpClientTransport::new(&url)
        .expect("url")
        .add_root_certificates_file(fixture("cert.pem"))
        .expect("cert.pem parses");
    let text = refused(wrong).await;
    assert!(text.contains("invalid peer certificate"), "{text}");

    // The server is unharmed: the right CA connects.
    let right = HttpClientTransport::new(&url)
        .expect("url")
        .add_root_certificates_file(fixture("ca.pem"))
        .expect("ca.pem");
    let client = within(builder(None).connect_http(right))
        .await
        .expect("connect");
    add(&client).await;
    client.close();
    let _ = stop.send(());
    within(task).await.expect("join");
}

#[test]
fn bad_root_certificates_are_refused_early() {
    let url = "https://localhost:1/mcp";
    let none = HttpClientTransport::new(url)
        .expect("url")
        .add_root_certificates(b"not a certificate")
        .expect_err("no PEM block");
    assert!(none.to_string().contains("no PEM certificate"), "{none}");
    let missing = HttpClientTransport::new(url)
        .expect("url")
        .add_root_certificates_file(fixture("missing.pem"))
        .expect_err("no file");
    assert!(missing.to_string().contains("missing.pem"), "{missing}");
    let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert!(
        HttpClientTransport::new(url)
            .expect("url")
            .add_root_certificates(garbage.as_bytes())
            .is_err()
    );
}

/// The ALPN protocol and HTTP version of every request a [`strict`] server saw.
type Seen = Arc<Mutex<Vec<(Option<Vec<u8>>, Version)>>>;

/// A TLS server offering `alpn` that speaks only the version ALPN chose (HTTP/2 for `h2`,
/// else HTTP/1.1): a client that ignored the choice would fail.
async fn strict(alpn: &[&[u8]]) -> (SocketAddr, Seen) {
    let mut config = (*tls().rustls()).clone();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (server, _) = crate::server::fixture::server();
    let router = StreamableHttp::new(server, HttpConfig::default()).router();
    let seen = Seen::default();
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(stream) = acceptor.accept(tcp).await else {
                continue;
            };
            let chosen = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
            let (router, record) = (router.clone(), Arc::clone(&record));
            let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
                let entry = (chosen.clone(), request.version());
                record.lock().expect("lock").push(entry);
                router.clone().oneshot(request)
            });
            let io = TokioIo::new(stream);
            let h2 = stream_is_h2(&io);
            tokio::spawn(async move {
                let _ = if h2 {
                    hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(io, service)
                        .await
                } else {
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await
                };
            });
        }
    });
    (addr, seen)
}

fn stream_is_h2(io: &TokioIo<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>) -> bool {
    io.inner().get_ref().1.alpn_protocol() == Some(b"h2")
}

/// Connects (pinned to 2025-11-25, a session with its GET stream) and calls `add`.
async fn session_over(addr: SocketAddr) {
    let url = format!("https://localhost:{}/mcp", addr.port());
    let transport = HttpClientTransport::new(&url)
        .expect("url")
        .add_root_certificates_file(fixture("ca.pem"))
        .expect("ca.pem");
    let client = within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
        .await
        .expect("connect");
    add(&client).await;
    client.close();
}

#[tokio::test]
async fn http2_when_the_server_picks_h2() {
    let (addr, seen) = strict(&[b"h2", b"http/1.1"]).await;
    session_over(addr).await;
    let seen = seen.lock().expect("lock").clone();
    assert!(seen.len() >= 3, "{seen:?}");
    for (alpn, version) in seen {
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
        assert_eq!(version, Version::HTTP_2);
    }
}

#[tokio::test]
async fn http1_when_the_server_picks_http1() {
    let (addr, seen) = strict(&[b"http/1.1"]).await;
    session_over(addr).await;
    let seen = seen.lock().expect("lock").clone();
    assert!(seen.len() >= 3, "{seen:?}");
    for (alpn, version) in seen {
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
        assert_eq!(version, Version::HTTP_11);
    }
}
