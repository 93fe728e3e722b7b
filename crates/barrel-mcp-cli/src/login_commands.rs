//! `barrel-mcp login`, `logout` and `auth status`, and the stored credentials every client
//! command uses (feature `oauth`).
//!
//! `login --url URL` runs the OAuth authorization code flow the server asks for: a loopback
//! redirect on 127.0.0.1, the browser opened on the authorization URL (or the URL printed with
//! `--no-browser`), and the tokens kept in the credentials file:
//! `$BARREL_MCP_HOME/credentials.json`, else `$XDG_CONFIG_HOME/barrel-mcp/credentials.json`,
//! else `~/.config/barrel-mcp/credentials.json` (mode 0600, keyed by issuer for client
//! registrations and by server URL for tokens). Client commands given `--url` use them
//! without flags (refreshing when needed, never opening a browser); no token is ever printed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use barrel_mcp::auth::client::oauth::{
    AuthorizationHandler, AuthorizationRequest, Callback, FileStore, LoopbackRedirect, OAuthClient,
    TokenStore, open_browser,
};
use barrel_mcp::client::Client;
use barrel_mcp::peer::BoxFuture;
use barrel_mcp::transport::http_client::HttpClientTransport;

/// The login commands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum LoginCommand {
    /// Log in to an OAuth-protected MCP server and keep the tokens for later commands.
    Login(Login),
    /// Forget the tokens kept for a server (or for every server).
    Logout {
        /// The server's endpoint.
        #[arg(long, value_name = "URL", required_unless_present = "all")]
        url: Option<String>,
        /// Forget every server's tokens.
        #[arg(long, conflicts_with = "url")]
        all: bool,
    },
    /// Stored credentials.
    #[command(subcommand)]
    Auth(AuthCommand),
}

/// `barrel-mcp auth …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AuthCommand {
    /// List the servers with stored tokens: issuer, scopes and expiry (never the tokens).
    Status,
}

/// The credentials file.
pub(crate) fn credentials_path() -> anyhow::Result<PathBuf> {
    if let Some(home) = std::env::var_os("BARREL_MCP_HOME") {
        return Ok(PathBuf::from(home).join("credentials.json"));
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".config"),
    };
    Ok(config.join("barrel-mcp").join("credentials.json"))
}

/// The OAuth client for `url` when the credentials file has tokens for it: it sends them,
/// refreshes them, and never starts an interactive login.
pub(crate) fn stored_credentials(
    url: &str,
    ca_certs: &[PathBuf],
) -> anyhow::Result<Option<OAuthClient>> {
    let store = FileStore::new(credentials_path()?);
    let key = normalize(url)?;
    if store.tokens(&key)?.is_none() {
        return Ok(None);
    }
    let mut builder = OAuthClient::builder(url)?
        .authorization_code(LoginFirst {
            url: url.to_owned(),
        })
        .store(store)
        // The DPoP key would not outlive this process: stored tokens are bearer tokens.
        .dpop(false);
    for ca in ca_certs {
        let pem = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
        builder = builder.add_root_certificates(&pem)?;
    }
    Ok(Some(builder.build()?))
}

/// A URL as the OAuth client keys its tokens.
fn normalize(url: &str) -> anyhow::Result<String> {
    let uri: http::Uri = url
        .parse()
        .with_context(|| format!("invalid URL {url:?}"))?;
    Ok(uri.to_string())
}

/// Refuses to authorize interactively: the tokens are gone, log in again.
struct LoginFirst {
    url: String,
}

impl AuthorizationHandler for LoginFirst {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1/callback".to_owned()
    }

    fn authorize<'a>(
        &'a self,
        _: AuthorizationRequest<'a>,
    ) -> BoxFuture<'a, Result<Callback, barrel_mcp::Error>> {
        let message = format!(
            "the stored login no longer works; run `barrel-mcp login --url {}`",
            self.url
        );
        Box::pin(async move { Err(barrel_mcp::Error::Auth(message)) })
    }
}

pub(crate) fn run(runtime: &tokio::runtime::Runtime, command: LoginCommand) -> anyhow::Result<()> {
    let store = FileStore::new(credentials_path()?);
    match command {
        LoginCommand::Login(login) => runtime.block_on(self::login(store, login)),
        LoginCommand::Logout { url, all } => {
            let urls = match url {
                Some(url) => vec![normalize(&url)?],
                None if all => store
                    .all_tokens()?
                    .into_iter()
                    .map(|(url, _)| url)
                    .collect(),
                None => bail!("give --url URL or --all"),
            };
            for url in &urls {
                store.remove_tokens(url)?;
                println!("logged out of {url}");
            }
            if urls.is_empty() {
                println!("no stored login");
            }
            Ok(())
        }
        LoginCommand::Auth(AuthCommand::Status) => {
            let all = store.all_tokens()?;
            if all.is_empty() {
                println!("no stored login ({})", store.path().display());
            }
            for (url, tokens) in all {
                let expiry = match tokens.expires_at {
                    None => "no expiry given".to_owned(),
                    Some(at) => describe_expiry(at),
                };
                let refresh = if tokens.refresh_token.is_some() {
                    ", refreshable"
                } else {
                    ""
                };
                println!(
                    "{url}\n  issuer: {}\n  scopes: {}\n  token: {expiry}{refresh}",
                    tokens.issuer,
                    if tokens.scopes.is_empty() {
                        "(none)".to_owned()
                    } else {
                        tokens.scopes.join(" ")
                    }
                );
            }
            Ok(())
        }
    }
}

/// The options of `login`.
#[derive(Debug, clap::Args)]
pub(crate) struct Login {
    /// The server's Streamable HTTP endpoint.
    #[arg(long, value_name = "URL")]
    url: String,
    /// A client id registered in advance (default: registered on the fly, or a client ID
    /// metadata document where the server takes them).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The file holding the pre-registered client's secret.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    client_secret_file: Option<PathBuf>,
    /// A scope to ask for (default: what the server's challenge or metadata names).
    /// Repeatable.
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// The loopback port of the redirect (default: any free one).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    redirect_port: u16,
    /// Print the authorization URL instead of opening a browser.
    #[arg(long)]
    no_browser: bool,
    /// A PEM CA certificate to trust for `https://` authorization servers. Repeatable.
    #[arg(long = "ca-cert", value_name = "FILE")]
    ca_cert: Vec<PathBuf>,
}

async fn login(store: FileStore, login: Login) -> anyhow::Result<()> {
    let key = normalize(&login.url)?;
    // A fresh login: the old tokens must not satisfy the server first.
    store.remove_tokens(&key)?;
    let no_browser = login.no_browser;
    let handler = LoopbackRedirect::bind(login.redirect_port, move |url| {
        eprintln!("To authorize, open this URL in a browser:\n{url}");
        if !no_browser && let Err(error) = open_browser(url) {
            eprintln!("(could not open a browser: {error})");
        }
    })
    .await
    .context("binding the loopback redirect")?;
    let mut builder = OAuthClient::builder(&login.url)?
        .authorization_code(handler)
        .store(store.clone())
        // Tokens outlive this process; a DPoP key would not.
        .dpop(false);
    if let Some(id) = &login.client_id {
        builder = builder.client_id(id.as_str());
    }
    if let Some(path) = &login.client_secret_file {
        let secret =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        builder = builder.client_secret(secret.trim_end_matches(['\n', '\r']));
    }
    if !login.scopes.is_empty() {
        builder = builder.scopes(login.scopes.iter().cloned());
    }
    for ca in &login.ca_cert {
        let pem = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
        builder = builder.add_root_certificates(&pem)?;
    }
    let oauth = Arc::new(builder.build()?);
    // The login first (the user may take minutes), then a connection that uses the token.
    oauth.authorize().await.map_err(|e| {
        crate::client_commands::fail(3, format!("logging in to {}: {e}", login.url))
    })?;
    let mut transport = HttpClientTransport::new(&login.url)?.auth(Arc::clone(&oauth));
    for ca in &login.ca_cert {
        transport = transport.add_root_certificates_file(ca)?;
    }
    let client = Client::builder()
        .name("barrel-mcp-cli", env!("CARGO_PKG_VERSION"))
        .request_timeout(Duration::from_secs(60))
        .connect_http(transport)
        .await
        .map_err(|e| {
            let code = if e.is_auth() { 3 } else { 4 };
            crate::client_commands::fail(code, format!("logging in to {}: {e}", login.url))
        })?;
    client.close();
    match store.tokens(&key)? {
        Some(tokens) => {
            println!("logged in to {}", login.url);
            println!("  issuer: {}", tokens.issuer);
            println!("  scopes: {}", tokens.scopes.join(" "));
            if let Some(at) = tokens.expires_at {
                println!("  token: {}", describe_expiry(at));
            }
            println!("  stored in {}", store.path().display());
        }
        None => println!(
            "{} did not ask for authorization; nothing stored",
            login.url
        ),
    }
    Ok(())
}

fn describe_expiry(at: SystemTime) -> String {
    match at.duration_since(SystemTime::now()) {
        Ok(left) => format!("expires in {} min", left.as_secs().div_ceil(60)),
        Err(_) => "expired".to_owned(),
    }
}
