//! TLS for the ready listener (feature `tls`): rustls with the ring provider, HTTP/1.1 and
//! HTTP/2 on one port through ALPN.
//!
//! The provider is passed to rustls explicitly (`ServerConfig::builder_with_provider`); the
//! process-wide default is never installed, so an application that links another provider
//! keeps its own choice. The handshake runs in the connection's task, under
//! [`HttpConfig::header_read_timeout`](super::HttpConfig::header_read_timeout), so a client that
//! never finishes it holds one connection slot for that long at most.
//!
//! Certificates can be replaced while serving ([`TlsConfig::reload`],
//! [`TlsConfig::reload_pem_files`]): every clone of a `TlsConfig` shares one slot, each new
//! connection is handshaken with what the slot holds then, and connections already open keep
//! the certificate they started with. `barrel-mcp serve --tls-cert … --tls-key …` reloads its
//! files on `SIGHUP`.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::StreamableHttp;
use super::listener::accept_loop;

/// The ALPN protocols offered, in order of preference.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A server certificate and key, ready for [`serve_tls`]. Cheap to clone; clones share the
/// certificate slot that [`reload`](Self::reload) replaces.
#[derive(Clone)]
pub struct TlsConfig {
    current: Arc<RwLock<Arc<ServerConfig>>>,
}

impl TlsConfig {
    /// Loads a PEM certificate chain (the server's certificate first, then intermediates) and
    /// a PEM private key (PKCS#8, PKCS#1 or SEC1) from files.
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> crate::Result<Self> {
        let (cert, key) = (cert.as_ref(), key.as_ref());
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| invalid(format!("reading certificates from {}: {e}", cert.display())))?;
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| invalid(format!("reading a private key from {}: {e}", key.display())))?;
        Self::from_der(chain, key)
    }

    /// Like [`from_pem_files`](Self::from_pem_files), from PEM text in memory.
    pub fn from_pem(cert: &[u8], key: &[u8]) -> crate::Result<Self> {
        let chain = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("reading certificates: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| invalid(format!("reading a private key: {e}")))?;
        Self::from_der(chain, key)
    }

    fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> crate::Result<Self> {
        if chain.is_empty() {
            return Err(invalid("no certificate found".to_owned()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(format!("TLS versions: {e}")))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| invalid(format!("the certificate and key do not fit: {e}")))?;
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Self::from_rustls(Arc::new(config)))
    }

    /// Uses a rustls configuration as it is: client authentication, resumption, another
    /// provider. Set its `alpn_protocols` to `h2` and `http/1.1` to serve both versions on the
    /// port (without ALPN the listener still tells them apart by the HTTP/2 preface).
    pub fn from_rustls(config: Arc<ServerConfig>) -> Self {
        Self {
            current: Arc::new(RwLock::new(config)),
        }
    }

    /// The rustls configuration new connections get.
    pub fn rustls(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves `next`'s certificate to new connections, here and in every clone of this
    /// configuration (the listener's included). Open connections are not touched.
    pub fn reload(&self, next: &TlsConfig) {
        let next = next.rustls();
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = next;
    }

    /// Loads a new certificate chain and key as [`from_pem_files`](Self::from_pem_files)
    /// does and serves them to new connections. On an error nothing changes. The new
    /// configuration is the default one that `from_pem_files` builds: a configuration made
    /// with [`from_rustls`](Self::from_rustls) (client authentication, another provider) is
    /// replaced by it, so rebuild such a one yourself and pass it to
    /// [`reload`](Self::reload).
    pub fn reload_pem_files(
        &self,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> crate::Result<()> {
        self.reload(&Self::from_pem_files(cert, key)?);
        Ok(())
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("alpn_protocols", &self.rustls().alpn_protocols)
            .finish_non_exhaustive()
    }
}

fn invalid(message: String) -> crate::Error {
    crate::Error::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        message,
    ))
}

/// Serves `http` over TLS on `listener` until `shutdown` resolves, then shuts down gracefully:
/// [`serve`](super::serve) with a TLS handshake on each accepted connection. HTTP/1.1 and
/// HTTP/2 share the port; ALPN picks the version.
///
/// A handshake that fails, or takes longer than
/// [`HttpConfig::header_read_timeout`](super::HttpConfig::header_read_timeout), drops the
/// connection. Everything else (bind check, connection cap, shutdown, cancel safety) is as in
/// [`serve`](super::serve).
pub async fn serve_tls(
    listener: TcpListener,
    http: StreamableHttp,
    tls: TlsConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> crate::Result<()> {
    let limit = http.config().header_read_timeout;
    accept_loop(listener, http, shutdown, move |stream| {
        // The configuration of the moment: a reload applies from the next connection on.
        let accept = TlsAcceptor::from(tls.rustls()).accept(stream);
        async move {
            match tokio::time::timeout(limit, accept).await {
                Ok(Ok(stream)) => Some(stream),
                Ok(Err(error)) => {
                    tracing::debug!(%error, "TLS handshake failed");
                    None
                }
                Err(_) => {
                    tracing::debug!("TLS handshake timed out");
                    None
                }
            }
        }
    })
    .await
}
