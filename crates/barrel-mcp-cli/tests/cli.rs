//! The `barrel-mcp` binary end to end: `serve --stdio` answers on stdout with nothing but MCP
//! messages, survives bad input, and exits cleanly when stdin closes.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Runs `barrel-mcp serve --stdio` with `input` on stdin, then closes stdin; returns the exit
/// success and every stdout line parsed as JSON.
fn run_stdio(input: &[u8]) -> (bool, Vec<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn({
        let input = input.to_vec();
        move || {
            let _ = stdin.write_all(&input);
        }
    });
    let output = child.wait_with_output().expect("the binary exits");
    writer.join().expect("writer thread");
    let stdout = String::from_utf8(output.stdout).expect("stdout is UTF-8");
    let lines = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
        })
        .collect();
    (output.status.success(), lines)
}

fn line(value: Value) -> String {
    format!("{value}\n")
}

fn response<'a>(lines: &'a [Value], id: &Value) -> &'a Value {
    lines
        .iter()
        .find(|l| &l["id"] == id && (l.get("result").is_some() || l.get("error").is_some()))
        .unwrap_or_else(|| panic!("no response to {id} in {lines:?}"))
}

#[test]
fn serves_a_session_survives_bad_input_and_exits_on_eof() {
    let mut input = String::new();
    input += &line(
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "cli-test", "version": "1" } } }),
    );
    input += &line(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    input += "this is not json\n";
    input += &"x".repeat(5 * 1024 * 1024);
    input += "\n";
    input += &line(
        json!({ "jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": {
        "name": "echo", "arguments": { "message": "still here" } } }),
    );
    input += &line(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }));
    let (success, lines) = run_stdio(input.as_bytes());
    assert!(success, "clean exit on EOF");
    assert_eq!(
        response(&lines, &json!(1))["result"]["protocolVersion"],
        "2025-06-18"
    );
    let errors: Vec<i64> = lines
        .iter()
        .filter(|l| l["id"].is_null())
        .filter_map(|l| l["error"]["code"].as_i64())
        .collect();
    assert_eq!(
        errors,
        [-32700, -32600],
        "a parse error, then the oversized line"
    );
    let echoed = response(&lines, &json!("call"));
    assert_eq!(echoed["result"]["content"][0]["text"], "still here");
    let tools = response(&lines, &json!(3))["result"]["tools"]
        .as_array()
        .expect("tools")
        .len();
    assert!(tools >= 9, "the demo's tools are listed ({tools})");
}

#[test]
fn discover_then_initialize_on_one_stdio_connection() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut input = String::new();
    input += &line(
        json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": meta } }),
    );
    input += &line(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": { "name": "cli-test", "version": "1" } } }),
    );
    let (success, lines) = run_stdio(input.as_bytes());
    assert!(success);
    let discovered = &response(&lines, &json!(1))["result"];
    assert_eq!(discovered["resultType"], "complete");
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "barrel-mcp-demo"
    );
    assert_eq!(
        response(&lines, &json!(2))["result"]["protocolVersion"],
        "2024-11-05"
    );
}

#[test]
fn an_empty_stdin_is_a_clean_exit() {
    let (success, lines) = run_stdio(b"");
    assert!(success);
    assert!(lines.is_empty(), "nothing is written unasked");
}

/// Runs a client command against `barrel-mcp serve --stdio` (the same binary); returns the exit
/// code, stdout and stderr.
fn client(args: &[&str]) -> (Option<i32>, String, String) {
    let bin = env!("CARGO_BIN_EXE_barrel-mcp");
    run_binary(args, &["--", bin, "serve", "--stdio"])
}

/// Runs the binary with `args` then `target`; returns the exit code, stdout and stderr.
fn run_binary(args: &[&str], target: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(args)
        .args(target)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn client_commands_drive_the_demo_server() {
    let (code, out, _) = client(&["call", "echo", r#"{"message":"hi"}"#]);
    assert_eq!((code, out.as_str()), (Some(0), "hi\n"));
    let (code, out, _) = client(&["tools"]);
    assert_eq!(code, Some(0));
    assert!(out.lines().any(|l| l.starts_with("echo ")), "{out}");
    let (code, out, _) = client(&["resources"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("demo://readme"), "{out}");
    let (code, out, _) = client(&["templates"]);
    assert!(
        code == Some(0) && out.contains("demo://notes/{id}"),
        "{out}"
    );
    let (code, out, _) = client(&["read", "demo://readme"]);
    assert!(code == Some(0) && out.contains("barrel-mcp demo"), "{out}");
    let (code, out, _) = client(&["prompts"]);
    assert!(code == Some(0) && out.contains("greet"), "{out}");
    let (code, out, _) = client(&["prompt", "greet", r#"{"name":"Ada"}"#]);
    assert!(code == Some(0) && out.contains("Ada"), "{out}");
    let (code, out, _) = client(&[
        "complete",
        "--prompt",
        "greet",
        "--argument",
        "style",
        "--value",
        "f",
    ]);
    assert_eq!((code, out.as_str()), (Some(0), "formal\nfriendly\n"));
    let (code, out, _) = client(&["ping"]);
    assert!(code == Some(0) && out.starts_with("pong"), "{out}");
}

#[test]
fn skills_are_listed_and_loaded_verified() {
    let (code, out, err) = client(&["skills"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("git-workflow     2   Branch, commit"),
        "{out}"
    );
    let (code, out, err) = client(&[
        "skill",
        "git-workflow",
        "--file",
        "references/commit-messages.md",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("# git-workflow (skill://git-workflow/SKILL.md), verified"),
        "{out}"
    );
    assert!(
        out.contains("name: git-workflow") && out.contains("# Commit messages"),
        "{out}"
    );
    let (code, out, _) = client(&["skill", "skill://git-workflow/SKILL.md", "--json"]);
    assert_eq!(code, Some(0));
    let loaded: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(loaded["skill"]["frontmatter"]["name"], "git-workflow");
    let (code, _, err) = client(&["skill", "nope"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no skill named \"nope\""), "{err}");
    // A file the skill's entry does not list is refused without being read.
    let (code, _, err) = client(&["skill", "git-workflow", "--file", "../../etc/passwd"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("verification failed"), "{err}");

    // `serve --skills DIR` serves a folder instead (this crate's own skills folder).
    let bin = env!("CARGO_BIN_EXE_barrel-mcp");
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");
    let output = Command::new(bin)
        .args([
            "skills", "--json", "--", bin, "serve", "--stdio", "--skills", folder,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(output.status.success());
    let listed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(listed["skills"][0]["uri"], "skill://git-workflow/SKILL.md");
    // A folder that is not one makes `serve` fail before it serves anything.
    let output = Command::new(bin)
        .args(["serve", "--stdio", "--skills", "/nonexistent/skills"])
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot open the folder"));
}

#[test]
fn client_commands_speak_every_revision_and_json() {
    for version in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
        "auto",
    ] {
        let (code, out, err) = client(&["info", "--json", "--protocol", version]);
        assert_eq!(code, Some(0), "{version}: {err}");
        let info: Value = serde_json::from_str(&out).expect("JSON");
        let expected = if version == "auto" {
            "2026-07-28"
        } else {
            version
        };
        assert_eq!(info["protocolVersion"], expected);
        assert_eq!(info["serverInfo"]["name"], "barrel-mcp-demo");
    }
}

#[test]
fn client_exit_codes_follow_the_inspector() {
    let (code, out, err) = client(&["call", "fail"]);
    assert_eq!(code, Some(5), "{out}{err}");
    let (code, _, err) = client(&["call", "countdown", r#"{"steps":2}"#]);
    assert_eq!(code, Some(0));
    assert!(err.contains("progress: 2/2"), "{err}");
    let (code, _, _) = client(&["call", "echo", "not json"]);
    assert_eq!(code, Some(1));
    let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["ping", "--", "/nonexistent/server"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(4));
    let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["ping", "--url", "http://127.0.0.1:9/mcp"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(4));
}

#[test]
fn a_closed_stdout_ends_a_client_command_quietly() {
    let binary = env!("CARGO_BIN_EXE_barrel-mcp");
    let mut child = Command::new(binary)
        .args(["tools", "--", binary, "serve", "--stdio"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client starts");
    // Close the reading end at once, as `| head -0` would.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("the client exits");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "status {:?}, stderr: {stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The test CA and localhost certificate of the library's TLS tests.
fn tls_fixture(name: &str) -> String {
    format!(
        "{}/../barrel-mcp/tests/fixtures/tls/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Kills the child when dropped, so a failing test leaves no server behind.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `barrel-mcp serve --http 127.0.0.1:PORT` on a free port with `extra` flags, and waits
/// until it listens; returns the server (killed when dropped) and its address.
fn start_serve<I, S>(extra: I) -> (Reaped, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let server = Reaped(
        Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
            .args(["serve", "--http", &addr])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (server, addr)
}

/// Starts `barrel-mcp serve --http 127.0.0.1:0` (the plain demo) and reads the address it
/// bound from its first line on stderr (no free-port race with the other tests); returns the
/// server (killed when dropped) and its address.
fn start_demo_server() -> (Reaped, String) {
    use std::io::BufRead as _;

    let mut child = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let stderr = child.stderr.take().expect("stderr");
    let server = Reaped(child);
    let mut lines = std::io::BufReader::new(stderr).lines();
    let first = lines
        .next()
        .expect("the server says where it listens")
        .expect("a line");
    // The rest is drained, so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("http://") || word.starts_with("https://"))
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    let addr = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("host:port")
        .to_owned();
    (server, addr)
}

#[test]
fn client_commands_reach_an_https_server_through_a_private_ca() {
    let binary = env!("CARGO_BIN_EXE_barrel-mcp");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    // The server reads copies, which the test replaces before a SIGHUP.
    let dir = std::env::temp_dir().join(format!("barrel-mcp-cli-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::copy(tls_fixture("cert.pem"), &cert).expect("copy");
    std::fs::copy(tls_fixture("key.pem"), &key).expect("copy");
    let (cert, key, ca) = (
        cert.display().to_string(),
        key.display().to_string(),
        tls_fixture("ca.pem"),
    );
    let server = Reaped(
        Command::new(binary)
            .args([
                "serve",
                "--http",
                &addr,
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let url = format!("https://localhost:{port}/mcp");
    let trusted = Command::new(binary)
        .args(["info", "--json", "--url", &url, "--ca-cert", &ca])
        .output()
        .expect("the client runs");
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let info: Value = serde_json::from_slice(&trusted.stdout).expect("JSON info");
    assert_eq!(info["serverInfo"]["name"], "barrel-mcp-demo", "{info}");
    let untrusted = Command::new(binary)
        .args(["ping", "--url", &url])
        .output()
        .expect("the client runs");
    assert_eq!(
        untrusted.status.code(),
        Some(4),
        "an unknown issuer is unreachable"
    );
    assert!(String::from_utf8_lossy(&untrusted.stderr).contains("UnknownIssuer"));

    // A renewed certificate: new files, then SIGHUP. New connections get it.
    std::fs::copy(tls_fixture("rotated-cert.pem"), &cert).expect("copy");
    std::fs::copy(tls_fixture("rotated-key.pem"), &key).expect("copy");
    let hup = Command::new("kill")
        .args(["-HUP", &server.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(hup.success());
    let rotated = tls_fixture("rotated-cert.pem");
    let reaches = |trusting: &str| {
        Command::new(binary)
            .args(["ping", "--url", &url, "--ca-cert", trusting])
            .output()
            .expect("the client runs")
            .status
            .success()
    };
    while !reaches(&rotated) {
        assert!(
            std::time::Instant::now() < deadline + std::time::Duration::from_secs(10),
            "the new certificate was never served"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!reaches(&ca), "the old certificate is no longer served");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_protected_by_a_jwt_secret() {
    use barrel_mcp::auth::jose::{Algorithm, SigningKey};

    let binary = env!("CARGO_BIN_EXE_barrel-mcp");
    let dir = std::env::temp_dir().join(format!("barrel-mcp-cli-jwt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let secret_file = dir.join("secret");
    let secret = b"a-test-secret-of-at-least-32-bytes!";
    std::fs::write(&secret_file, [&secret[..], b"\n"].concat()).expect("write");
    let (_server, addr) = start_serve([
        "--auth-jwt-secret-file".as_ref(),
        secret_file.as_os_str(),
        "--auth-issuer".as_ref(),
        "https://as.test".as_ref(),
        "--authorization-server".as_ref(),
        "https://as.test".as_ref(),
        "--required-scope".as_ref(),
        "mcp:read".as_ref(),
    ] as [&std::ffi::OsStr; 8]);
    let url = format!("http://{addr}/mcp");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let token = SigningKey::hmac(secret, Algorithm::HS256)
        .expect("key")
        .sign(
            serde_json::Map::new(),
            &json!({"iss": "https://as.test", "aud": url, "sub": "cli", "exp": now + 600, "scope": "mcp:read"}),
        )
        .expect("sign");
    let without = Command::new(binary)
        .args(["tools", "--url", &url])
        .output()
        .expect("the client runs");
    assert_eq!(without.status.code(), Some(3), "authorization needed");
    let header = format!("Authorization: Bearer {token}");
    let with = Command::new(binary)
        .args(["tools", "--url", &url, "-H", &header])
        .output()
        .expect("the client runs");
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert!(String::from_utf8_lossy(&with.stdout).contains("echo"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the binary with `args`, `stdin` on its standard input; returns status, stdout, stderr.
fn run_with_stdin(args: &[&str], stdin: &str) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    let output = child.wait_with_output().expect("exits");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn hashes_from_stdin_protect_serve_with_api_keys_and_basic() {
    use barrel_mcp::auth::Secret;
    use barrel_mcp::auth::server::{api_key, basic};

    let dir = std::env::temp_dir().join(format!("barrel-mcp-cli-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pepper_file = dir.join("pepper");
    std::fs::write(&pepper_file, "a-pepper\n").expect("write");
    let pepper_arg = pepper_file.display().to_string();
    let (code, key_hash, stderr) =
        run_with_stdin(&["hash-key", "--pepper-file", &pepper_arg], "key-1\n");
    assert_eq!(code, Some(0), "{stderr}");
    let key_hash = key_hash.trim().to_owned();
    assert!(api_key::verify_key(
        &Secret::new("a-pepper"),
        "key-1",
        &key_hash
    ));
    let (code, password_hash, stderr) =
        run_with_stdin(&["hash-password", "--iterations", "1000"], "pw\n");
    assert_eq!(code, Some(0), "{stderr}");
    let password_hash = password_hash.trim().to_owned();
    assert!(basic::verify_password(&Secret::new("pw"), &password_hash));

    let keys_file = dir.join("keys");
    std::fs::write(
        &keys_file,
        format!("# bots\n{key_hash} build-bot mcp:read\n"),
    )
    .expect("write");
    let users_file = dir.join("users");
    std::fs::write(&users_file, format!("ada {password_hash}\n")).expect("write");
    let (_server, addr) = start_serve([
        "--auth-api-keys".as_ref(),
        keys_file.as_os_str(),
        "--auth-pepper-file".as_ref(),
        pepper_file.as_os_str(),
        "--auth-basic".as_ref(),
        users_file.as_os_str(),
    ] as [&std::ffi::OsStr; 6]);
    let url = format!("http://{addr}/mcp");
    let tools = |header: &str| {
        Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
            .args(["tools", "--url", &url, "-H", header])
            .output()
            .expect("the client runs")
            .status
            .code()
    };
    assert_eq!(tools("X-API-Key: key-1"), Some(0));
    assert_eq!(tools("X-API-Key: key-2"), Some(3));
    // ada:pw in base64.
    assert_eq!(tools("Authorization: Basic YWRhOnB3"), Some(0));
    assert_eq!(tools("Authorization: Basic YWRhOm5v"), Some(3));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A GET with no redirect followed: the status line and the `Location` header.
fn get_no_follow(url: &str) -> (String, Option<String>) {
    use std::io::Read as _;
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let location = answer.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        l.split_once(':')
            .filter(|(name, _)| name.eq_ignore_ascii_case("location"))
            .map(|(_, value)| value.trim().to_owned())
    });
    (status, location)
}

#[test]
fn login_stores_tokens_that_every_client_command_uses() {
    use std::io::BufRead as _;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let authorization = runtime
        .block_on(
            barrel_mcp_conformance::auth_server::TestAuthorizationServer::start_local(
                Default::default(),
            ),
        )
        .expect("the authorization server starts");
    let issuer = authorization.issuer().to_owned();
    let jwks = authorization.jwks_url();
    let (_server, addr) = start_serve([
        "--auth-jwks-url",
        &jwks,
        "--auth-issuer",
        &issuer,
        "--authorization-server",
        &issuer,
        "--required-scope",
        "mcp:read",
    ]);
    let url = format!("http://{addr}/mcp");
    let home = std::env::temp_dir().join(format!("barrel-mcp-cli-login-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let with_home = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
            .args(args)
            .env("BARREL_MCP_HOME", &home)
            .output()
            .expect("the binary runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };

    // Without a login: exit 3, with the hint.
    let (code, _, stderr) = with_home(&["tools", "--url", &url]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("barrel-mcp login --url"), "{stderr}");

    // Login: the printed URL is followed as a browser would (the test authorization server
    // approves at once), then its redirect to the loopback listener.
    let mut login = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["login", "--url", &url, "--no-browser"])
        .env("BARREL_MCP_HOME", &home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("login starts");
    let stderr = login.stderr.take().expect("stderr");
    let authorize_url = std::io::BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find(|line| line.starts_with("http"))
        .expect("login prints the authorization URL");
    let (status, location) = get_no_follow(&authorize_url);
    assert!(status.contains("302"), "{status}");
    let callback = location.expect("a redirect");
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    let (status, _) = get_no_follow(&callback);
    assert!(status.contains("200"), "{status}");
    let output = login.wait_with_output().expect("login ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains(&format!("issuer: {issuer}")), "{stdout}");
    assert!(stdout.contains("mcp:read"), "{stdout}");

    // The file is private and holds no token where it is printed.
    let file = home.join("credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (code, status_out, _) = with_home(&["auth", "status"]);
    assert_eq!(code, Some(0));
    assert!(
        status_out.contains(&url) && status_out.contains(&issuer),
        "{status_out}"
    );
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    let token = stored["tokens"][&url]["access_token"]
        .as_str()
        .expect("a stored token");
    assert!(!status_out.contains(token) && !stdout.contains(token));

    // Every client command uses it with no flag.
    let (code, tools, stderr) = with_home(&["tools", "--url", &url]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(tools.contains("echo"), "{tools}");

    // Logout: back to exit 3.
    let (code, _, _) = with_home(&["logout", "--url", &url]);
    assert_eq!(code, Some(0));
    let (code, _, _) = with_home(&["tools", "--url", &url]);
    assert_eq!(code, Some(3));
    let _ = std::fs::remove_dir_all(&home);
}

/// Runs a client command against `url`; returns the exit code, stdout and stderr.
fn client_at(url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    run_binary(args, &["--url", url])
}

#[test]
fn a_detached_task_is_followed_waited_on_and_cancelled_by_id() {
    let (_server, addr) = start_demo_server();
    let url = format!("http://{addr}/mcp");
    let start = |steps: &str| {
        let (code, out, err) = client_at(
            &url,
            &["call", "countdown", steps, "--task", "--detach", "--json"],
        );
        assert_eq!(code, Some(0), "{err}");
        let task: Value = serde_json::from_str(&out).expect("the task as JSON");
        assert_eq!(task["status"], "working", "{task}");
        task["taskId"].as_str().expect("an id").to_owned()
    };
    let id = start(r#"{"steps":3}"#);
    let (code, out, err) = client_at(&url, &["task", &id]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with(&id), "{out}");
    let (code, out, err) = client_at(&url, &["task", &id, "--wait"]);
    assert_eq!((code, out.as_str()), (Some(0), "done\n"), "{err}");
    assert!(err.contains(&format!("task {id}: completed")), "{err}");
    let (code, out, _) = client_at(&url, &["task", &id, "--json"]);
    assert_eq!(code, Some(0));
    let done: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(done["status"], "completed");

    let long = start(r#"{"steps":10}"#);
    let (code, out, _) = client_at(&url, &["task", &long, "--cancel"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("cancelled"), "{out}");
    // An id the server never gave out: a JSON-RPC error, exit 1.
    let (code, _, err) = client_at(&url, &["task", "no-such-task"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unknown task"), "{err}");
    // The 2026-07-28 extension has no list; a 2025-11-25 session lists its own (none here).
    let (code, _, err) = client_at(&url, &["tasks"]);
    assert_ne!(code, Some(0), "{err}");
    let (code, out, _) = client_at(&url, &["tasks", "--protocol", "2025-11-25"]);
    assert_eq!((code, out.as_str()), (Some(0), ""));
}

#[test]
fn a_server_from_a_servers_file() {
    let bin = env!("CARGO_BIN_EXE_barrel-mcp");
    let dir = std::env::temp_dir().join(format!("barrel-mcp-servers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("mcp.json");
    let config = serde_json::json!({ "mcpServers": {
        "demo": { "command": bin, "args": ["serve", "${BARREL_MCP_TEST_UNSET:---stdio}"] },
        "off": { "command": "/nonexistent", "disabled": true }
    }});
    std::fs::write(&file, config.to_string()).expect("write");
    let run = |name: &str| {
        Command::new(bin)
            .args(["tools", "--server", name, "--config"])
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .expect("runs")
    };
    let listed = run("demo");
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("echo"));
    let unknown = run("off");
    assert_eq!(unknown.status.code(), Some(1));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("no server \"off\" (known: demo)"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_catalog_over_two_servers_and_a_routed_call() {
    let bin = env!("CARGO_BIN_EXE_barrel-mcp");
    let dir = std::env::temp_dir().join(format!("barrel-mcp-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("mcp.json");
    let server = serde_json::json!({ "command": bin, "args": ["serve", "--stdio"] });
    let config = serde_json::json!({ "mcpServers": { "one": server, "two": server } });
    std::fs::write(&file, config.to_string()).expect("write");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .arg("--config")
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .expect("runs")
    };
    let catalog = run(&["catalog"]);
    assert_eq!(catalog.status.code(), Some(0), "{catalog:?}");
    let listed = String::from_utf8_lossy(&catalog.stdout);
    for line in [
        "tool      one__echo",
        "tool      two__echo",
        "resource  two+demo://readme",
    ] {
        assert!(listed.contains(line), "{line} in {listed}");
    }
    let openai = run(&["catalog", "--format", "openai-chat"]);
    let tools: Value = serde_json::from_slice(&openai.stdout).expect("json");
    assert!(
        tools
            .as_array()
            .expect("array")
            .iter()
            .any(|t| t["function"]["name"] == "two__add")
    );
    let call = r#"{"choices":[{"message":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"two__add","arguments":"{\"a\":2,\"b\":3}"}}]}}]}"#;
    let routed = run(&["route", "--format", "openai-chat", call]);
    assert_eq!(routed.status.code(), Some(0), "{routed:?}");
    let messages: Value = serde_json::from_slice(&routed.stdout).expect("json");
    assert_eq!(messages[0]["role"], "tool");
    assert_eq!(messages[0]["tool_call_id"], "c1");
    assert!(messages.to_string().contains("5.0"), "{messages}");
    let read = run(&["catalog", "--read", "one+demo://readme"]);
    let contents: Value = serde_json::from_slice(&read.stdout).expect("json");
    assert_eq!(contents[0]["uri"], "one+demo://readme");
    let unknown = run(&["route", "--format", "gemini", r#"{"candidates":[]}"#]);
    assert_eq!(unknown.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}
