//! `conformance-server`: the conformance fixture over Streamable HTTP on
//! `http://127.0.0.1:$PORT/mcp` (`PORT` from the environment, default 3000). Stops on Ctrl-C or
//! SIGTERM, gracefully.
//!
//! One node of several: with `REDIS_URL`, tasks and HTTP sessions are kept in that Redis
//! (under `REDIS_PREFIX`, default `conformance`), so several servers given the same URL and
//! prefix serve one service behind a round-robin proxy; `BARREL_MCP_REQUEST_STATE_KEYS` gives
//! them the same `requestState` keys, and the fixture's run-time changes (the triggered tool
//! and prompt) are made on every node.
//!
//! Knobs for failure tests (milliseconds, optional): `TASK_LEASE_MS` sets the tasks' runner
//! lease (`TaskLimits::lease`, default 10 s), so a killed node's tasks are failed sooner;
//! `SESSION_IDLE_MS` sets `HttpConfig::session_idle_timeout` (the sessions' TTL in the store);
//! `FINISHED_STREAM_MS` sets `SharedSessions::finished_stream_ttl` (how long a finished SSE
//! stream stays in the store, one-event streams of a deleted session included).

use std::time::Duration;

use anyhow::Context as _;
use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::server::ServerConfig;
use barrel_mcp::server::request_state::KeyRing;
use barrel_mcp::store::BusOptions;
use barrel_mcp::store::redis::{Redis, RedisOptions};
use barrel_mcp::task::RedisTaskStore;
use barrel_mcp_conformance::fixture;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("PORT={port:?} is not a port number"))?,
        Err(_) => 3000,
    };
    let mut limits = ServerConfig::default().task_limits;
    if let Some(lease) = millis("TASK_LEASE_MS")? {
        limits.lease = lease;
    }
    let mut config = HttpConfig::default();
    if let Some(idle) = millis("SESSION_IDLE_MS")? {
        config.session_idle_timeout = idle;
    }
    let mut tasks = None;
    if let Ok(url) = std::env::var("REDIS_URL") {
        let options = RedisOptions {
            prefix: std::env::var("REDIS_PREFIX").unwrap_or_else(|_| "conformance".into()),
            ..RedisOptions::default()
        };
        let redis = Redis::connect(&url, options)
            .await
            .context("connecting to REDIS_URL")?;
        tasks = Some(RedisTaskStore::on(&redis, limits.clone()));
        let bus = BusOptions {
            name: format!("conformance-{port}"),
            ..BusOptions::default()
        };
        let mut shared = barrel_mcp::http::SharedSessions::redis(redis, bus)
            .await
            .context("joining the nodes")?;
        if let Some(finished) = millis("FINISHED_STREAM_MS")? {
            shared.finished_stream_ttl = finished;
        }
        config.shared_sessions = Some(shared);
    }
    let bus = config
        .shared_sessions
        .as_ref()
        .map(|shared| shared.bus.clone());
    let mut builder = fixture::builder_on(bus.clone());
    if let Some(ring) = KeyRing::from_env().context(KeyRing::ENV_VAR)? {
        builder = builder.request_state_keys(ring);
    }
    builder = builder.config(ServerConfig {
        task_limits: limits,
        ..ServerConfig::default()
    });
    if let Some(tasks) = tasks {
        builder = builder.task_store(tasks);
    }
    let server = builder.build().context("building the fixture")?;
    if let Some(bus) = bus {
        fixture::replicated::follow(server.clone(), bus)
            .await
            .context("following the other nodes")?;
    }
    fixture::spawn_background(&server);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    let http = StreamableHttp::new(server, config);
    eprintln!("conformance-server: serving http://127.0.0.1:{port}/mcp");
    barrel_mcp::http::serve(listener, http, shutdown_signal())
        .await
        .context("serving Streamable HTTP")?;
    Ok(())
}

/// The environment variable `name` read as a number of milliseconds; `None` when unset.
fn millis(name: &str) -> anyhow::Result<Option<Duration>> {
    match std::env::var(name) {
        Ok(ms) => {
            let ms: u64 = ms
                .parse()
                .with_context(|| format!("{name}={ms:?} is not a number of milliseconds"))?;
            Ok(Some(Duration::from_millis(ms)))
        }
        Err(_) => Ok(None),
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
