//! `https://` for both HTTP client transports (feature `http-client-tls`): a connector that
//! opens TCP with hyper-util's `HttpConnector` and, for `https` URLs, runs a rustls handshake on
//! it.
//!
//! The ring provider is passed to rustls explicitly (`ClientConfig::builder_with_provider`);
//! the process-wide default is never installed or read. The trusted roots are Mozilla's, compiled
//! in (`webpki-roots`: no file, no network, no platform verifier), plus the PEM certificates a
//! user adds for a private CA. ALPN offers `h2` then `http/1.1`; when the server picks `h2`, the
//! connection says so and hyper speaks HTTP/2 on it.

use std::fmt;
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use http::uri::Scheme;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::Error;

/// The ALPN protocols offered, in order of preference.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The TLS settings of a transport: the roots it trusts, or a rustls configuration given whole.
#[derive(Clone)]
pub(crate) struct ClientTls {
    roots: RootCertStore,
    config: Arc<ClientConfig>,
}

impl ClientTls {
    /// Mozilla's roots, ring, ALPN `h2` and `http/1.1`.
    pub(crate) fn new() -> Result<Self, Error> {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config = build(roots.clone())?;
        Ok(Self { roots, config })
    }

    /// Trusts the certificates in `pem` too (a private CA). Fails when there are none, or one
    /// cannot be a trust anchor.
    pub(crate) fn add_roots_pem(&mut self, pem: &[u8]) -> Result<(), Error> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("reading CA certificates: {e}")))?;
        self.add_roots(certs)
    }

    /// Like [`add_roots_pem`](Self::add_roots_pem), from a file.
    pub(super) fn add_roots_pem_file(&mut self, path: &Path) -> Result<(), Error> {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| {
                invalid(format!(
                    "reading CA certificates from {}: {e}",
                    path.display()
                ))
            })?;
        self.add_roots(certs)
            .map_err(|e| invalid(format!("{}: {e}", path.display())))
    }

    fn add_roots(&mut self, certs: Vec<CertificateDer<'static>>) -> Result<(), Error> {
        if certs.is_empty() {
            return Err(invalid("no PEM certificate found".to_owned()));
        }
        for cert in certs {
            self.roots
                .add(cert)
                .map_err(|e| invalid(format!("not a usable CA certificate: {e}")))?;
        }
        self.config = build(self.roots.clone())?;
        Ok(())
    }

    /// Uses `config` as it is (client certificates, another provider, other roots).
    pub(super) fn set_rustls(&mut self, config: Arc<ClientConfig>) {
        self.config = config;
    }

    /// The connector for a client: TCP from `http` (which must accept `https` URLs), then the
    /// handshake, bounded by `handshake_timeout`.
    pub(crate) fn connector<R>(
        &self,
        http: HttpConnector<R>,
        handshake_timeout: Duration,
    ) -> Connector<R> {
        Connector {
            http,
            tls: TlsConnector::from(Arc::clone(&self.config)),
            handshake_timeout,
        }
    }
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("roots", &self.roots.len())
            .field("alpn_protocols", &self.config.alpn_protocols)
            .finish_non_exhaustive()
    }
}

fn build(roots: RootCertStore) -> Result<Arc<ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS versions: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

fn invalid(message: String) -> Error {
    Error::Io(io::Error::new(io::ErrorKind::InvalidData, message))
}

/// Plain TCP for `http://` URLs, TLS over it for `https://` ones. `R` resolves host names
/// (the system's resolver, or one that checks where a name leads).
#[derive(Clone)]
pub(crate) struct Connector<R = GaiResolver> {
    http: HttpConnector<R>,
    tls: TlsConnector,
    handshake_timeout: Duration,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<R> tower_service::Service<Uri> for Connector<R>
where
    R: tower_service::Service<Name, Error = io::Error> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = std::net::SocketAddr>,
    R::Future: Send,
{
    type Response = MaybeTls;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<MaybeTls, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let https = uri.scheme() == Some(&Scheme::HTTPS);
        // An IPv6 literal keeps its brackets in the URI, never in the server name.
        let host = uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned());
        let tcp = self.http.call(uri);
        let tls = self.tls.clone();
        let limit = self.handshake_timeout;
        Box::pin(async move {
            let tcp = tcp.await?;
            if !https {
                return Ok(MaybeTls::Plain(tcp));
            }
            let host = host.ok_or("the URL has no host")?;
            let name = ServerName::try_from(host.clone())
                .map_err(|e| format!("{host:?} is not a valid TLS server name: {e}"))?;
            let stream = tokio::time::timeout(limit, tls.connect(name, tcp.into_inner()))
                .await
                .map_err(|_| format!("the TLS handshake with {host} timed out"))?
                .map_err(|e| format!("the TLS handshake with {host} failed: {e}"))?;
            Ok(MaybeTls::Tls(Box::new(TokioIo::new(stream))))
        })
    }
}

/// A connection made by [`Connector`].
pub(crate) enum MaybeTls {
    Plain(TokioIo<TcpStream>),
    /// Boxed: a rustls connection is large next to a socket.
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Connection for MaybeTls {
    fn connected(&self) -> Connected {
        match self {
            Self::Plain(io) => io.connected(),
            Self::Tls(io) => {
                let (tcp, session) = io.inner().get_ref();
                let connected = tcp.connected();
                if session.alpn_protocol() == Some(b"h2") {
                    connected.negotiated_h2()
                } else {
                    connected
                }
            }
        }
    }
}

impl Read for MaybeTls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_read(cx, buf),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for MaybeTls {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_write(cx, buf),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(io) => io.is_write_vectored(),
            Self::Tls(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_flush(cx),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }
}
