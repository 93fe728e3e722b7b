//! The node flags of `serve` as parsed, their checks and defaults, the key file they read, and
//! the Redis URL as messages show it.

use clap::{CommandFactory as _, Parser as _};

use super::*;
use crate::serve_redis::redact;
use crate::{Cli, Command};

/// The node flags of `serve ARGS`, or the parse error.
fn parse(args: &[&str]) -> Result<NodeArgs, clap::Error> {
    let mut argv = vec!["barrel-mcp", "serve"];
    argv.extend_from_slice(args);
    match Cli::try_parse_from(argv)?.command {
        Command::Serve { node, .. } => Ok(node),
        other => panic!("not serve: {other:?}"),
    }
}

#[test]
fn the_node_flags_parse() {
    let node = parse(&[
        "--http",
        "127.0.0.1:0",
        "--redis",
        "redis://127.0.0.1:6379/2",
        "--redis-prefix",
        "svc:a",
        "--node-name",
        "web-1.eu_west",
        "--request-state-key-file",
        "/etc/barrel/keys",
        "--task-lease",
        "2.5",
    ])
    .expect("parses");
    assert_eq!(
        node.task_lease,
        Some(std::time::Duration::from_millis(2500))
    );
    assert_eq!(node.redis.as_deref(), Some("redis://127.0.0.1:6379/2"));
    assert_eq!(node.redis_prefix.as_deref(), Some("svc:a"));
    assert_eq!(node.node_name.as_deref(), Some("web-1.eu_west"));
    assert_eq!(
        node.request_state_key_file,
        Some(PathBuf::from("/etc/barrel/keys"))
    );
    // Stdio takes them too.
    let node = parse(&["--stdio", "--node-name", "n"]).expect("parses");
    assert_eq!(node.node_name.as_deref(), Some("n"));
    // None given: no Redis, no keys, default name.
    let node = parse(&[]).expect("parses");
    assert!(node.redis.is_none() && node.redis_prefix.is_none() && node.node_name.is_none());
    assert!(node.request_state_key_file.is_none() && node.task_lease.is_none());
}

#[test]
fn the_task_lease_reaches_the_server() {
    let node = Node {
        name: "n".to_owned(),
        lease: Some(std::time::Duration::from_secs(3)),
        keys: None,
        #[cfg(feature = "redis")]
        shared: None,
    };
    let server = node
        .configure(barrel_mcp::server::Server::builder())
        .build()
        .expect("builds");
    assert_eq!(
        server.config().task_limits.lease,
        std::time::Duration::from_secs(3)
    );
}

#[test]
fn bad_node_flags_are_refused() {
    let long = "n".repeat(MAX_NODE_NAME + 1);
    let exact = "n".repeat(MAX_NODE_NAME);
    assert!(parse(&["--node-name", &exact]).is_ok());
    for args in [
        &["--node-name", ""][..],
        &["--node-name", "a b"],
        &["--node-name", "é"],
        &["--node-name", &long],
        // A prefix needs --redis, and no braces or blanks.
        &["--redis-prefix", "p"],
        &["--redis", "redis://h/", "--redis-prefix", ""],
        &["--redis", "redis://h/", "--redis-prefix", "a{b}"],
        &["--redis", "redis://h/", "--redis-prefix", "a b"],
        &["--redis"],
        &["--request-state-key-file"],
        // A lease is positive seconds, at least 30 ms, at most a day.
        &["--task-lease", "0"],
        &["--task-lease", "0.01"],
        &["--task-lease", "-1"],
        &["--task-lease", "ten"],
        &["--task-lease", "86401"],
    ] {
        assert!(parse(args).is_err(), "{args:?} parsed");
    }
}

#[test]
fn help_says_what_goes_to_redis() {
    let mut cli = Cli::command();
    let serve = cli.find_subcommand_mut("serve").expect("serve");
    let help = serve.render_long_help().to_string();
    for said in [
        "--redis <URL>",
        "Keep tasks and HTTP sessions in the Redis",
        "Stream replay and server-to-client requests stay with the node",
        "--task-lease <SECONDS>",
        "BARREL_MCP_REDIS_URL",
        "--redis-prefix <PREFIX>",
        "--node-name <NAME>",
        "--request-state-key-file <FILE>",
        "BARREL_MCP_REQUEST_STATE_KEYS",
    ] {
        assert!(help.contains(said), "{said} missing from:\n{help}");
    }
}

#[test]
fn the_default_node_name_is_the_host_and_the_pid() {
    let name = default_node_name();
    let pid = format!("-{}", std::process::id());
    assert!(name.ends_with(&pid), "{name}");
    assert!(name.len() > pid.len(), "{name}");
    assert_eq!(parse_node_name(&name), Ok(name.clone()));
}

#[test]
fn keys_come_from_the_file() {
    let dir = std::env::temp_dir().join(format!("barrel-mcp-cli-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("keys");
    let hex_key = "ab".repeat(32);
    std::fs::write(
        &file,
        format!(
            "# rotated on Monday\nhex:{hex_key}\nhex:{}\n",
            "cd".repeat(32)
        ),
    )
    .expect("written");
    let ring = read_keys(Some(&file))
        .expect("reads")
        .expect("a ring from the file");
    assert_eq!(ring.kids().count(), 2);
    assert_eq!(ring.current_kid(), KeyRing::kid_of(&[0xab; 32]));
    let said = describe_keys(&ring);
    assert!(
        said.starts_with(&format!(
            "requestState keys {} (sealing), ",
            ring.current_kid()
        )),
        "{said}"
    );
    assert!(!said.contains(&hex_key), "{said}");

    std::fs::write(&file, "hex:abcd\n").expect("written");
    let error = format!("{:#}", read_keys(Some(&file)).expect_err("a short key"));
    assert!(
        error.contains("--request-state-key-file") && error.contains("line 1"),
        "{error}"
    );
    assert!(error.contains("2 bytes; at least 32"), "{error}");
    let missing = dir.join("missing");
    let error = format!("{:#}", read_keys(Some(&missing)).expect_err("no file"));
    assert!(error.contains("cannot read"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_urls_are_shown_without_their_password() {
    let cases = [
        ("redis://127.0.0.1:6379/", "redis://127.0.0.1:6379/"),
        (
            "redis://:hunter2@10.0.0.1:6380/1",
            "redis://:***@10.0.0.1:6380/1",
        ),
        (
            "rediss://app:hunter2@cache.internal/0",
            "rediss://app:***@cache.internal/0",
        ),
        // A password holding `@`, `:` or `/`.
        ("redis://app:hun@ter:2@h:1/", "redis://app:***@h:1/"),
        ("redis://app:hun/ter2@h/", "redis://app:***@h/"),
        // User information without `:`: hidden whole.
        ("redis://hunter2@h/", "redis://***@h/"),
        (
            "redis+unix:///run/redis.sock?db=1&pass=hunter2",
            "redis+unix:///run/redis.sock?db=1&pass=***",
        ),
        (
            "unix:///run/redis.sock?PASSWORD=hunter2&user=app",
            "unix:///run/redis.sock?PASSWORD=***&user=app",
        ),
        ("app:hunter2@h", "app:***@h"),
    ];
    for (url, shown) in cases {
        let redacted = redact(url);
        assert_eq!(redacted, shown, "{url}");
        assert!(!redacted.contains("hunter2") && !redacted.contains("ter2"));
    }
}
