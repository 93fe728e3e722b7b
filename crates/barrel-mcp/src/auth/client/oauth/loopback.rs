//! [`LoopbackRedirect`]: the authorization code grant for people at a terminal (RFC 8252 §7.3):
//! the redirect URI is `http://127.0.0.1:PORT/callback` on a listener this process holds; the
//! user's browser is sent to the authorization URL, and the authorization server's redirect
//! comes back to the listener.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::handler::{AuthorizationHandler, AuthorizationRequest, Callback};
use crate::Error;
use crate::peer::BoxFuture;

/// What is done with the authorization URL.
type Show = Arc<dyn Fn(&str) + Send + Sync>;

/// [`LoopbackRedirect`]: the authorization code grant for people at a terminal (RFC 8252 §7.3):
/// the redirect URI is `http://127.0.0.1:PORT/callback` on a listener this process holds; the
/// user's browser is sent to the authorization URL, and the authorization server's redirect
/// comes back to the listener.
///
/// - The listener is bound before the flow starts (port 0: one the system picks), on
///   `127.0.0.1` only.
/// - One callback is taken per authorization: the first request to `/callback` whose `state`
///   is the one the authorization request carries (other paths get 404, other states 400, so
///   a browser's favicon request or a stray page cannot end the login); the page it answers
///   says whether to go back to the terminal. The OAuth client checks `state` and `iss` again.
///   The listener serves every later authorization (a step-up) too.
/// - The wait is bounded ([`LoopbackRedirect::timeout`], default 5 min); requests are read
///   with hyper, with a 10 s limit each.
/// - The authorization URL goes to a function of your choosing: print it, or open a browser
///   with [`open_browser`] (which passes it as one argument, never through a shell).
pub struct LoopbackRedirect {
    /// Held by the authorization in progress.
    listener: tokio::sync::Mutex<TcpListener>,
    addr: SocketAddr,
    show: Show,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("addr", &self.addr)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Binds `127.0.0.1:port` (0 for any free port); `show` gets the authorization URL.
    pub async fn bind(
        port: u16,
        show: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<Self, Error> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        Ok(Self {
            listener: tokio::sync::Mutex::new(listener),
            addr,
            show: Arc::new(show),
            timeout: Duration::from_secs(300),
        })
    }

    /// How long to wait for the callback. Default 5 min.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl AuthorizationHandler for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://{}/callback", self.addr)
    }

    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest<'a>,
    ) -> BoxFuture<'a, Result<Callback, Error>> {
        Box::pin(async move {
            let listener = self.listener.lock().await;
            let state = Callback::from_redirect(request.url())
                .state
                .ok_or_else(|| Error::Auth("the authorization request has no state".into()))?;
            (self.show)(request.url());
            tokio::time::timeout(self.timeout, wait(&listener, Arc::new(state)))
                .await
                .map_err(|_| Error::Auth("no authorization came back in time".into()))?
        })
    }
}

/// Serves the listener until the callback for `state` arrives.
async fn wait(listener: &TcpListener, state: Arc<String>) -> Result<Callback, Error> {
    let (found, mut callbacks) = mpsc::channel::<Callback>(1);
    loop {
        tokio::select! {
            callback = callbacks.recv() => {
                return callback.ok_or_else(|| Error::Auth("the loopback listener stopped".into()));
            }
            accepted = listener.accept() => {
                let (stream, _) = accepted?;
                let (found, state) = (found.clone(), Arc::clone(&state));
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        answer(request, found.clone(), Arc::clone(&state))
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    let _ = tokio::time::timeout(Duration::from_secs(10), connection).await;
                });
            }
        }
    }
}

async fn answer(
    request: http::Request<Incoming>,
    found: mpsc::Sender<Callback>,
    state: Arc<String>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let page = |status: StatusCode, text: &'static str| {
        let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *response.status_mut() = status;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        // Each connection answers for one authorization: a browser must not carry it over to
        // the next one.
        response.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
        response
    };
    let uri = request.uri();
    if uri.path() != "/callback" {
        return Ok(page(StatusCode::NOT_FOUND, "<p>Not found.</p>"));
    }
    let callback = Callback::from_redirect(&uri.to_string());
    if callback.state.as_deref() != Some(state.as_str()) {
        return Ok(page(
            StatusCode::BAD_REQUEST,
            "<p>This is not the authorization this terminal waits for.</p>",
        ));
    }
    let failed = callback.error.is_some();
    let _ = found.try_send(callback);
    Ok(if failed {
        page(
            StatusCode::OK,
            "<p>The authorization was refused. You can close this window.</p>",
        )
    } else {
        page(
            StatusCode::OK,
            "<p>Authorized. You can close this window and go back to the terminal.</p>",
        )
    })
}

/// Opens `url` in the desktop's browser (`xdg-open`, `open` on macOS, `start` on Windows),
/// the URL passed as one argument. Only `http://` and `https://` URLs are opened.
pub fn open_browser(url: &str) -> std::io::Result<()> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "only http(s) URLs are opened",
        ));
    }
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut command = std::process::Command::new("rundll32");
        command.arg("url.dll,FileProtocolHandler");
        command
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::auth::fetch::{FetchLimits, Fetcher};
    use crate::auth::net::NetPolicy;
    use crate::transport::http_client::tls::ClientTls;

    #[tokio::test]
    async fn the_callback_comes_back() {
        let shown = Arc::new(Mutex::new(String::new()));
        let seen = Arc::clone(&shown);
        let handler = LoopbackRedirect::bind(0, move |url| {
            *seen.lock().unwrap() = url.to_owned();
        })
        .await
        .unwrap()
        .timeout(Duration::from_secs(10));
        let redirect = handler.redirect_uri();
        assert!(redirect.starts_with("http://127.0.0.1:"));
        let fetcher = Fetcher::new(
            NetPolicy::PRIVATE,
            FetchLimits::default(),
            false,
            &ClientTls::new().unwrap(),
        );
        let request = AuthorizationRequest {
            url: "https://as.example/authorize?x=1&state=s1",
            fetcher: &fetcher,
        };
        let browser = async {
            // A favicon first, then the redirect.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let base: http::Uri = redirect.parse().unwrap();
            let favicon = crate::auth::fetch::resolve(&base, "/favicon.ico").unwrap();
            let miss = fetcher.get_json(&favicon).await.unwrap();
            assert_eq!(miss.status, StatusCode::NOT_FOUND);
            let stray: http::Uri = format!("{redirect}?code=evil&state=other").parse().unwrap();
            let refused = fetcher.get_json(&stray).await.unwrap();
            assert_eq!(refused.status, StatusCode::BAD_REQUEST);
            let back: http::Uri = format!("{redirect}?code=c1&state=s1").parse().unwrap();
            let page = fetcher.get_json(&back).await.unwrap();
            assert_eq!(page.status, StatusCode::OK);
        };
        let (callback, ()) = tokio::join!(handler.authorize(request), browser);
        let callback = callback.unwrap();
        assert_eq!(callback.code.as_deref(), Some("c1"));
        assert_eq!(callback.state.as_deref(), Some("s1"));
        assert_eq!(
            *shown.lock().unwrap(),
            "https://as.example/authorize?x=1&state=s1"
        );
        // The listener serves a second authorization (a step-up).
        let second = AuthorizationRequest {
            url: "https://as.example/authorize?state=s2",
            fetcher: &fetcher,
        };
        let browser = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let back: http::Uri = format!("{redirect}?code=c2&state=s2").parse().unwrap();
            fetcher.get_json(&back).await.unwrap();
        };
        let (callback, ()) = tokio::join!(handler.authorize(second), browser);
        assert_eq!(callback.unwrap().code.as_deref(), Some("c2"));
        assert!(open_browser("file:///etc/passwd").is_err());
    }
}
