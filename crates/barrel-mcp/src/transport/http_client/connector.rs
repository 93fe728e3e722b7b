//! The hyper client both HTTP transports send with: hyper-util's pooled client over TCP, with
//! TLS for `https://` URLs when the feature `http-client-tls` is on.

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::HttpClientConfig;

#[cfg(feature = "http-client-tls")]
pub(super) use super::tls::ClientTls;
#[cfg(feature = "http-client-tls")]
type Connector = super::tls::Connector;
#[cfg(not(feature = "http-client-tls"))]
type Connector = HttpConnector;

/// The client of one transport.
pub(super) type HttpClient = Client<Connector, Full<Bytes>>;

/// Without the feature there is nothing to configure.
#[cfg(not(feature = "http-client-tls"))]
#[derive(Debug, Clone)]
pub(super) struct ClientTls;

#[cfg(not(feature = "http-client-tls"))]
impl ClientTls {
    pub(super) fn new() -> Result<Self, crate::Error> {
        Ok(Self)
    }
}

/// A client whose TCP connect (and TLS handshake, each) is bounded by
/// [`HttpClientConfig::connect_timeout`].
pub(super) fn client(config: &HttpClientConfig, tls: &ClientTls) -> HttpClient {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(config.connect_timeout));
    http.set_nodelay(true);
    #[cfg(feature = "http-client-tls")]
    let connector = {
        http.enforce_http(false);
        tls.connector(http, config.connect_timeout)
    };
    #[cfg(not(feature = "http-client-tls"))]
    let connector = {
        let ClientTls = tls;
        http
    };
    Client::builder(TokioExecutor::new()).build(connector)
}
