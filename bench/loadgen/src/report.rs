//! Results: one TSV line per server and case, and the markdown table built from them.
//!
//! A line is `server<TAB>case<TAB>key=value<TAB>…`, one per round. Each cell of the table is
//! the median round of its (server, case) pair: by req/s for timed cases, by RSS with the
//! sessions open for the memory case. The other numbers of a cell come from that same round.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The servers, in column order: (key used in the TSV, column title).
const SERVERS: [(&str, &str); 3] = [
    ("barrel-mcp", "barrel-mcp"),
    ("rmcp", "rmcp"),
    ("ts-sdk", "TypeScript SDK"),
];

/// The timed cases, in row order: (case key, title).
const CASES: [(&str, &str); 5] = [
    ("sse64", "64 conns, stateful, SSE replies"),
    ("json64", "64 conns, stateful, JSON replies"),
    ("stateless64", "64 conns, 2026-07-28 stateless"),
    ("seq1", "1 conn, sequential"),
    (
        "sessions8",
        "session creation (8 conns; initialize + initialized + DELETE)",
    ),
];

type Fields = HashMap<String, String>;

/// Formats one TSV line.
pub fn line(server: &str, case: &str, fields: &[(&str, String)]) -> String {
    let mut out = format!("{server}\t{case}");
    for (key, value) in fields {
        let _ = write!(out, "\t{key}={value}");
    }
    out
}

fn parse(tsv: &str) -> HashMap<(String, String), Fields> {
    let mut rounds: HashMap<(String, String), Vec<Fields>> = HashMap::new();
    for row in tsv.lines().filter(|l| !l.trim().is_empty()) {
        let mut cols = row.split('\t');
        let (Some(server), Some(case)) = (cols.next(), cols.next()) else {
            continue;
        };
        let fields = cols
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        rounds
            .entry((server.to_owned(), case.to_owned()))
            .or_default()
            .push(fields);
    }
    rounds
        .into_iter()
        .map(|(key, mut all)| {
            let by = if key.1 == "memory" { "full_kib" } else { "rps" };
            all.sort_by(|a, b| {
                num(Some(a), by)
                    .partial_cmp(&num(Some(b), by))
                    .unwrap_or(Ordering::Equal)
            });
            let median = all.swap_remove(all.len() / 2);
            (key, median)
        })
        .collect()
}

fn num(fields: Option<&Fields>, key: &str) -> Option<f64> {
    fields?.get(key)?.parse().ok()
}

fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(barrel: Option<f64>, rmcp: Option<f64>) -> String {
    match (barrel, rmcp) {
        (Some(b), Some(r)) if r > 0.0 => format!("{:.2}×", b / r),
        _ => "—".to_owned(),
    }
}

/// One table row: a title, a cell per server, and the ratio of the first two numbers.
fn row(out: &mut String, title: &str, cells: &[(String, Option<f64>)]) {
    let _ = write!(out, "| {title} |");
    for (text, _) in cells {
        let _ = write!(out, " {text} |");
    }
    let _ = writeln!(out, " {} |", ratio(cells[0].1, cells[1].1));
}

/// The cost of bearer JWT authentication: barrel-mcp's `sse64` against the same case with a
/// JWT on every request (`barrel-mcp-jwt`, `sse64-jwt`), same run.
fn auth_cost(results: &HashMap<(String, String), Fields>) -> Option<String> {
    let get = |server: &str, case: &str| results.get(&(server.to_owned(), case.to_owned()));
    let plain = num(get("barrel-mcp", "sse64"), "cpu_us")?;
    let jwt = num(get("barrel-mcp-jwt", "sse64-jwt"), "cpu_us")?;
    let (plain_rps, jwt_rps) = (
        num(get("barrel-mcp", "sse64"), "rps")?,
        num(get("barrel-mcp-jwt", "sse64-jwt"), "rps")?,
    );
    Some(format!(
        "\nAuthentication cost (barrel-mcp, 64 conns, SSE replies): {plain:.0} µs of server CPU per \
         call without auth, {jwt:.0} µs with a bearer JWT (HS256, key held by the server) on every \
         request: {:.2}x ({} and {} req/s).\n",
        jwt / plain,
        thousands(plain_rps),
        thousands(jwt_rps)
    ))
}

/// Builds the markdown table from a TSV file's text.
pub fn table(tsv: &str) -> String {
    let results = parse(tsv);
    let auth = auth_cost(&results);
    let get = |server: &str, case: &str| results.get(&(server.to_owned(), case.to_owned()));
    let mut out = String::from("| case | metric |");
    for (_, title) in SERVERS {
        let _ = write!(out, " {title} |");
    }
    out.push_str(" barrel-mcp / rmcp |\n|---|---|");
    out.push_str(&"---:|".repeat(SERVERS.len() + 1));
    out.push('\n');
    for (case, title) in CASES {
        let unit = if case == "sessions8" {
            "sessions/s"
        } else {
            "req/s"
        };
        let rate: Vec<_> = SERVERS
            .iter()
            .map(|(s, _)| {
                let f = get(s, case);
                let Some(rps) = num(f, "rps") else {
                    return ("n/a".to_owned(), None);
                };
                let mut text = thousands(rps);
                let reply = f.and_then(|f| f.get("reply")).map_or("-", String::as_str);
                let wanted = match case {
                    "json64" => "json",
                    "sessions8" => "-",
                    _ => "",
                };
                if case == "json64" && reply != wanted {
                    let _ = write!(text, " ({reply} replies)");
                }
                if let Some(e) = num(f, "errors").filter(|e| *e > 0.0) {
                    let _ = write!(text, " ({} errors)", thousands(e));
                }
                (text, Some(rps))
            })
            .collect();
        row(&mut out, &format!("{title} | {unit}"), &rate);
        let latency: Vec<_> = SERVERS
            .iter()
            .map(|(s, _)| {
                let f = get(s, case);
                match (num(f, "p50_us"), num(f, "p99_us")) {
                    (Some(p50), Some(p99)) => (
                        format!("{:.3} / {:.3}", p50 / 1000.0, p99 / 1000.0),
                        Some(p50),
                    ),
                    _ => ("n/a".to_owned(), None),
                }
            })
            .collect();
        row(&mut out, " | p50 / p99 ms", &latency);
        let cpu: Vec<_> = SERVERS
            .iter()
            .map(|(s, _)| match num(get(s, case), "cpu_us") {
                Some(cpu) => (format!("{cpu:.0}"), Some(cpu)),
                None => ("n/a".to_owned(), None),
            })
            .collect();
        row(&mut out, " | server CPU µs per op", &cpu);
    }
    let memory = |key: &str, scale: f64, digits: usize| -> Vec<(String, Option<f64>)> {
        SERVERS
            .iter()
            .map(|(s, _)| {
                let f = get(s, "memory");
                let value = match key {
                    "per_session" => {
                        match (num(f, "full_kib"), num(f, "idle_kib"), num(f, "opened")) {
                            (Some(full), Some(idle), Some(n)) if n > 0.0 => Some((full - idle) / n),
                            _ => None,
                        }
                    }
                    _ => num(f, key),
                };
                match value {
                    Some(v) => (format!("{:.*}", digits, v / scale), Some(v)),
                    None => ("n/a".to_owned(), None),
                }
            })
            .collect()
    };
    row(
        &mut out,
        "server RSS | idle, MiB",
        &memory("idle_kib", 1024.0, 1),
    );
    row(
        &mut out,
        " | 1,000 open sessions, MiB",
        &memory("full_kib", 1024.0, 1),
    );
    row(
        &mut out,
        " | per open session, KiB",
        &memory("per_session", 1.0, 1),
    );
    row(
        &mut out,
        " | idle, anonymous only (RssAnon), MiB",
        &memory("idle_anon_kib", 1024.0, 1),
    );
    let mut notes = Vec::new();
    // Errors of every round, not only of the median ones shown in the table.
    for row in tsv.lines() {
        let mut cols = row.split('\t');
        let (Some(server), Some(case)) = (cols.next(), cols.next()) else {
            continue;
        };
        let fields: Fields = cols
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        if let Some(e) = num(Some(&fields), "errors").filter(|e| *e > 0.0) {
            let round = fields.get("round").map_or("?", String::as_str);
            let first = fields.get("first_error").map_or("", String::as_str);
            notes.push(format!(
                "errors: {server} {case} round {round}: {e}; first: {first}"
            ));
        }
    }
    for note in notes {
        let _ = writeln!(out, "\n- {note}");
    }
    if let Some(auth) = auth {
        out.push_str(&auth);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
    }

    #[test]
    fn ratio_and_missing_cells() {
        let tsv = "barrel-mcp\tsse64\trps=200\tp50_us=100\tp99_us=900\treply=sse\n\
                   rmcp\tsse64\trps=100\tp50_us=200\tp99_us=800\treply=sse\n";
        let table = table(tsv);
        assert!(table.contains("| 200 | 100 | n/a | 2.00× |"), "{table}");
        assert!(table.contains("0.100 / 0.900"), "{table}");
    }

    #[test]
    fn the_median_round_wins() {
        let tsv = "rmcp\tseq1\tround=1\trps=10\tp50_us=1\n\
                   rmcp\tseq1\tround=2\trps=30\tp50_us=3\n\
                   rmcp\tseq1\tround=3\trps=20\tp50_us=2\n";
        let results = parse(tsv);
        let cell = &results[&("rmcp".to_owned(), "seq1".to_owned())];
        assert_eq!(cell["round"], "3");
    }
}
