//! The `rr-proxy` command line and binary.

use std::time::Duration;

use barrel_mcp_conformance::rr_proxy::{Config, LogTo, Record};

use super::backend::{Backend, KillOnDrop, OneConnection, request, within};

#[test]
fn the_command_line_parses_and_refuses_what_it_should() {
    let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let config = Config::from_args(args(&[
        "--listen",
        "127.0.0.1:0",
        "--backend",
        "http://127.0.0.1:4001",
        "--backend=http://localhost:4002/",
        "--log",
        "/tmp/x.log",
        "--max-body=10",
        "--connect-timeout-ms",
        "250",
    ]))
    .expect("valid");
    assert_eq!(config.listen.to_string(), "127.0.0.1:0");
    let backends: Vec<String> = config.backends.iter().map(|a| a.to_string()).collect();
    assert_eq!(backends, ["127.0.0.1:4001", "localhost:4002"]);
    assert!(matches!(&config.log, LogTo::File(path) if path.to_str() == Some("/tmp/x.log")));
    assert_eq!(config.max_body, 10);
    assert_eq!(config.connect_timeout, Duration::from_millis(250));

    for bad in [
        &["--backend", "http://127.0.0.1:1"][..],
        &["--listen", "127.0.0.1:0"],
        &["--listen", "nowhere", "--backend", "http://127.0.0.1:1"],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "https://127.0.0.1:1",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://127.0.0.1:1/mcp",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://u@127.0.0.1:1",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://127.0.0.1:1",
            "--max-body",
            "x",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://127.0.0.1:1",
            "--what",
        ],
        &["--listen"],
    ] {
        assert!(Config::from_args(args(bad)).is_err(), "{bad:?} is refused");
    }
}

#[tokio::test]
async fn the_binary_prints_its_url_first_and_proxies() {
    within(async {
        let backend = Backend::start("A").await;
        let mut child = KillOnDrop(
            std::process::Command::new(env!("CARGO_BIN_EXE_rr-proxy"))
                .args(["--listen", "127.0.0.1:0", "--backend", &backend.url()])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("rr-proxy starts"),
        );
        let stderr = child.0.stderr.take().expect("stderr");
        let (first, stderr) = tokio::task::spawn_blocking(move || {
            use std::io::BufRead as _;
            let mut reader = std::io::BufReader::new(stderr);
            let mut line = String::new();
            reader.read_line(&mut line).expect("a line");
            (line, reader)
        })
        .await
        .expect("read");
        let url = first
            .trim_end()
            .strip_prefix("rr-proxy listening on ")
            .unwrap_or_else(|| panic!("the first line names the URL: {first:?}"))
            .to_owned();
        let addr = url
            .strip_prefix("http://")
            .expect("http")
            .parse()
            .expect("an address");
        let mut connection = OneConnection::open(addr).await;
        let mut initialize = request(
            "POST",
            "/mcp",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
        );
        initialize
            .headers_mut()
            .insert("host", "localhost".parse().expect("value"));
        let (status, body) = connection.call(initialize).await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "A"));
        let line = tokio::task::spawn_blocking(move || {
            use std::io::BufRead as _;
            let mut reader = stderr;
            let mut line = String::new();
            reader.read_line(&mut line).expect("a line");
            line
        })
        .await
        .expect("read");
        let record = Record::parse_line(line.trim_end()).expect("a JSON record on stderr");
        assert_eq!(record.rpc_method.as_deref(), Some("initialize"));
        assert_eq!(record.new_session.as_deref(), Some("session-1"));
        drop(child);
    })
    .await;
}
