//! Results: one TSV line per server and case, and the markdown table built from them.
//!
//! A line is `server<TAB>case<TAB>key=value<TAB>…`, one per round. Each cell of the table is
//! the median round of its (server, case) pair: by req/s for timed cases, by RSS with the
//! sessions open for the memory case. The other numbers of a cell come from that same round.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The servers, in column order: (key used in the TSV, column title). barrel-mcp and rmcp
/// always have a column; the others only when the results have them. A base (see
/// [`BASE_PREFIX`]) comes right after barrel-mcp.
const SERVERS: [(&str, &str); 5] = [
    ("barrel-mcp", "barrel-mcp"),
    ("barrel-mcp+redis", "barrel-mcp, Redis"),
    ("rmcp", "rmcp"),
    ("floor", "floor"),
    ("ts-sdk", "TypeScript SDK"),
];

/// The TSV key of barrel-mcp built from an older checkout (`BENCH_BASE_SRC`) starts with this,
/// then the short commit (`barrel-mcp@15c34b7`); the key is also its column title. Its column
/// gets a ratio `barrel-mcp / base` and a summary of the rows where barrel-mcp is worse.
const BASE_PREFIX: &str = "barrel-mcp@";

/// How far worse than the base a throughput or memory row may be before the summary lists it.
const BASE_TOLERANCE: f64 = 0.05;

/// One metric row of a case.
#[derive(Clone, Copy)]
enum Metric {
    /// Operations per second (the unit names them), with the reply kind when it is not the
    /// case's own, and the errors.
    Rate(&'static str),
    /// p50 / p99 latency.
    Latency,
    /// Server CPU time per operation.
    Cpu(&'static str),
    /// The time until every pipelined call was answered.
    Wall,
    /// Cold start: median wall time, then min / max.
    ColdMedian,
    ColdRange,
    /// Cold start: the server's CPU time until the call is answered.
    ColdCpu,
}

const HTTP_ROWS: &[Metric] = &[
    Metric::Rate("req/s"),
    Metric::Latency,
    Metric::Cpu("server CPU µs per op"),
];

/// The cases, in row order: (case key, title, rows).
const CASES: [(&str, &str, &[Metric]); 9] = [
    ("sse64", "64 conns, stateful, SSE replies", HTTP_ROWS),
    ("json64", "64 conns, stateful, JSON replies", HTTP_ROWS),
    ("stateless64", "64 conns, 2026-07-28 stateless", HTTP_ROWS),
    (
        "sessionless64",
        "64 conns, 2025-11-25 sessionless",
        HTTP_ROWS,
    ),
    ("seq1", "1 conn, sequential", HTTP_ROWS),
    (
        "sessions8",
        "session creation (8 conns; initialize + initialized + DELETE)",
        &[
            Metric::Rate("sessions/s"),
            Metric::Latency,
            Metric::Cpu("server CPU µs per op"),
        ],
    ),
    (
        "stdio-pipelined",
        "stdio, 10,000 calls pipelined",
        &[
            Metric::Rate("calls/s"),
            Metric::Wall,
            Metric::Cpu("server CPU µs per call"),
        ],
    ),
    (
        "stdio-seq",
        "stdio, sequential",
        &[
            Metric::Rate("calls/s"),
            Metric::Latency,
            Metric::Cpu("server CPU µs per call"),
        ],
    ),
    (
        "cold",
        "cold start (stdio: spawn, initialize, 1 call, exit)",
        &[Metric::ColdMedian, Metric::ColdRange, Metric::ColdCpu],
    ),
];

/// The reply kind a case asks for; a cell whose median round got another says so.
fn wanted_reply(case: &str) -> Option<&'static str> {
    match case {
        "json64" | "sessionless64" => Some("json"),
        _ => None,
    }
}

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
            let by = match key.1.as_str() {
                "memory" => "full_kib",
                "cold" => "p50_us",
                _ => "rps",
            };
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

/// `over / under` of two fields, when both are there and above zero.
fn fields_ratio(fields: Option<&Fields>, over: &str, under: &str) -> Option<f64> {
    match (num(fields, over), num(fields, under)) {
        (Some(over), Some(under)) if over > 0.0 && under > 0.0 => Some(over / under),
        _ => None,
    }
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

/// One table row: a title, a cell per shown server, and the ratios of barrel-mcp's number
/// to rmcp's, (when the floor has a column) to the floor's and (when a base has a column) to
/// the base's. Returns barrel-mcp's number and the base's, for the summary.
fn row(
    out: &mut String,
    title: &str,
    shown: &[(&str, &str)],
    cells: &[(String, Option<f64>)],
) -> (Option<f64>, Option<f64>) {
    let _ = write!(out, "| {title} |");
    for (text, _) in cells {
        let _ = write!(out, " {text} |");
    }
    let value = |server: &str| {
        shown
            .iter()
            .position(|(s, _)| *s == server)
            .and_then(|i| cells[i].1)
    };
    let _ = write!(out, " {} |", ratio(value("barrel-mcp"), value("rmcp")));
    if shown.iter().any(|(s, _)| *s == "floor") {
        let _ = write!(out, " {} |", ratio(value("barrel-mcp"), value("floor")));
    }
    let base = shown
        .iter()
        .position(|(s, _)| s.starts_with(BASE_PREFIX))
        .map(|i| cells[i].1);
    if let Some(base) = base {
        let _ = write!(out, " {} |", ratio(value("barrel-mcp"), base));
    }
    out.push('\n');
    (value("barrel-mcp"), base.flatten())
}

/// The base's TSV key, if the results have one (the first in sort order, should a file have
/// several).
fn base_server(results: &HashMap<(String, String), Fields>) -> Option<&str> {
    results
        .keys()
        .map(|(server, _)| server.as_str())
        .filter(|s| s.starts_with(BASE_PREFIX))
        .min()
}

/// The servers with a column: barrel-mcp and rmcp, and the others the results have, the base
/// right after barrel-mcp.
fn shown_servers(results: &HashMap<(String, String), Fields>) -> Vec<(&str, &str)> {
    let base = base_server(results);
    let mut shown = Vec::new();
    for (s, title) in SERVERS {
        if matches!(s, "barrel-mcp" | "rmcp") || results.keys().any(|(server, _)| server == s) {
            shown.push((s, title));
        }
        if let Some(base) = base.filter(|_| s == "barrel-mcp") {
            shown.push((base, base));
        }
    }
    shown
}

/// A throughput or memory row, compared with the base for the summary.
struct Compared {
    label: String,
    /// barrel-mcp's number and the base's.
    values: (Option<f64>, Option<f64>),
    higher_is_better: bool,
}

/// The summary under the table when a base has a column: every throughput or memory row where
/// barrel-mcp is worse than the base by more than [`BASE_TOLERANCE`], or "none", and the rows
/// that could not be compared (n/a in either column).
fn base_summary(base: &str, compared: &[Compared]) -> String {
    let mut worse = Vec::new();
    let mut missing = Vec::new();
    for c in compared {
        match c.values {
            (Some(barrel), Some(old)) if old > 0.0 => {
                let r = barrel / old;
                let bad = if c.higher_is_better {
                    r < 1.0 - BASE_TOLERANCE
                } else {
                    r > 1.0 + BASE_TOLERANCE
                };
                if bad {
                    worse.push(format!("{} {r:.2}×", c.label));
                }
            }
            _ => missing.push(c.label.clone()),
        }
    }
    let mut out = format!(
        "\nWorse than the base ({base}) by more than {:.0}% (throughput and memory rows): {}.",
        BASE_TOLERANCE * 100.0,
        if worse.is_empty() {
            "none".to_owned()
        } else {
            worse.join("; ")
        }
    );
    if !missing.is_empty() {
        let _ = write!(
            out,
            " Not compared (n/a in either column): {}.",
            missing.join("; ")
        );
    }
    out.push('\n');
    out
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

/// What keeping sessions, streams and tasks in Redis costs: the `barrel-mcp+redis` column (a
/// redis-server on the server's core) against the memory column and rmcp, same run.
fn redis_cost(results: &HashMap<(String, String), Fields>) -> Option<String> {
    let rps =
        |server: &str, case: &str| num(results.get(&(server.to_owned(), case.to_owned())), "rps");
    let redis = rps("barrel-mcp+redis", "sse64")?;
    let memory = rps("barrel-mcp", "sse64")?;
    let mut out = format!(
        "\nSessions in Redis (64 conns, SSE replies): {} req/s, {:.2}x the memory column",
        thousands(redis),
        redis / memory
    );
    if let Some(rmcp) = rps("rmcp", "sse64").filter(|r| *r > 0.0) {
        let _ = write!(out, " and {:.2}x rmcp", redis / rmcp);
    }
    if let Some(sessions) = rps("barrel-mcp+redis", "sessions8") {
        let _ = write!(out, "; session creation {} per s", thousands(sessions));
    }
    out.push_str(".\n");
    Some(out)
}

/// The text and value of one cell of a case's metric row.
fn cell(f: Option<&Fields>, case: &str, metric: Metric) -> (String, Option<f64>) {
    let na = || ("n/a".to_owned(), None);
    match metric {
        Metric::Rate(_) => {
            let Some(rps) = num(f, "rps") else {
                return na();
            };
            let mut text = thousands(rps);
            let reply = f.and_then(|f| f.get("reply")).map_or("-", String::as_str);
            if let Some(wanted) = wanted_reply(case)
                && reply != wanted
            {
                let _ = write!(text, " ({reply} replies)");
            }
            if let Some(e) = num(f, "errors").filter(|e| *e > 0.0) {
                let _ = write!(text, " ({} errors)", thousands(e));
            }
            (text, Some(rps))
        }
        Metric::Latency => match (num(f, "p50_us"), num(f, "p99_us")) {
            (Some(p50), Some(p99)) => (
                format!("{:.3} / {:.3}", p50 / 1000.0, p99 / 1000.0),
                Some(p50),
            ),
            _ => na(),
        },
        Metric::Cpu(_) => match num(f, "cpu_us") {
            Some(cpu) if cpu < 10.0 => (format!("{cpu:.1}"), Some(cpu)),
            Some(cpu) => (format!("{cpu:.0}"), Some(cpu)),
            None => na(),
        },
        Metric::Wall => match num(f, "wall_us") {
            Some(wall) => (format!("{:.1}", wall / 1000.0), Some(wall)),
            None => na(),
        },
        Metric::ColdMedian => match num(f, "p50_us").filter(|_| num(f, "runs") > Some(0.0)) {
            Some(p50) => {
                let mut text = format!("{:.1}", p50 / 1000.0);
                if let Some(e) = num(f, "errors").filter(|e| *e > 0.0) {
                    let _ = write!(text, " ({e} errors)");
                }
                (text, Some(p50))
            }
            None => na(),
        },
        Metric::ColdRange => match (num(f, "min_us"), num(f, "max_us"), num(f, "runs")) {
            (Some(min), Some(max), Some(runs)) if runs > 0.0 => (
                format!("{:.1} / {:.1}", min / 1000.0, max / 1000.0),
                Some(min),
            ),
            _ => na(),
        },
        Metric::ColdCpu => match num(f, "cpu_us") {
            Some(cpu) => (format!("{:.1}", cpu / 1000.0), Some(cpu)),
            None => na(),
        },
    }
}

fn metric_title(case_title: &str, metric: Metric, first: bool) -> String {
    let name = match metric {
        Metric::Rate(unit) => unit,
        Metric::Latency => "p50 / p99 ms",
        Metric::Cpu(label) => label,
        Metric::Wall => "until all answered, ms",
        Metric::ColdMedian => "median wall ms",
        Metric::ColdRange => "min / max wall ms",
        Metric::ColdCpu => "server CPU ms until the call is answered (median)",
    };
    if first {
        format!("{case_title} | {name}")
    } else {
        format!(" | {name}")
    }
}

/// The cells the chart plots, one line each after a header: case title, server title, req/s
/// (or calls/s), server CPU µs per operation (empty when not measured). Only the cases with a
/// rate, and only the servers with a column.
pub fn chart_data(tsv: &str) -> String {
    let results = parse(tsv);
    let shown = shown_servers(&results);
    let mut out = String::from("case\tserver\trate\tcpu_us\n");
    for (case, title, metrics) in CASES {
        if !matches!(metrics.first(), Some(Metric::Rate(_))) {
            continue;
        }
        for (server, server_title) in &shown {
            let f = results.get(&((*server).to_owned(), case.to_owned()));
            let Some(rate) = num(f, "rps") else {
                continue;
            };
            let cpu = num(f, "cpu_us").map_or_else(String::new, |c| format!("{c:.2}"));
            let _ = writeln!(out, "{title}\t{server_title}\t{rate:.1}\t{cpu}");
        }
    }
    out
}

/// Builds the markdown table from a TSV file's text.
pub fn table(tsv: &str) -> String {
    let results = parse(tsv);
    let auth = auth_cost(&results);
    let redis = redis_cost(&results);
    let shown = shown_servers(&results);
    let get = |server: &str, case: &str| results.get(&(server.to_owned(), case.to_owned()));
    let base = base_server(&results);
    let mut compared = Vec::new();
    let mut out = String::from("| case | metric |");
    for (_, title) in &shown {
        let _ = write!(out, " {title} |");
    }
    out.push_str(" barrel-mcp / rmcp |");
    let with_floor = shown.iter().any(|(s, _)| *s == "floor");
    if with_floor {
        out.push_str(" barrel-mcp / floor |");
    }
    if base.is_some() {
        out.push_str(" barrel-mcp / base |");
    }
    out.push_str("\n|---|---|");
    out.push_str(
        &"---:|".repeat(shown.len() + 1 + usize::from(with_floor) + usize::from(base.is_some())),
    );
    out.push('\n');
    for (case, title, metrics) in CASES {
        // A case nobody ran (an older result file, or only some cases) has no rows.
        if !shown.iter().any(|(s, _)| get(s, case).is_some()) {
            continue;
        }
        for (i, metric) in metrics.iter().enumerate() {
            let cells: Vec<_> = shown
                .iter()
                .map(|(s, _)| cell(get(s, case), case, *metric))
                .collect();
            let values = row(
                &mut out,
                &metric_title(title, *metric, i == 0),
                &shown,
                &cells,
            );
            if let Metric::Rate(unit) = metric {
                compared.push(Compared {
                    label: format!("{title}, {unit}"),
                    values,
                    higher_is_better: true,
                });
            }
        }
    }
    let memory = |key: &str, scale: f64, digits: usize| -> Vec<(String, Option<f64>)> {
        shown
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
                    "after_over_idle" => fields_ratio(f, "after_kib", "idle_kib"),
                    "anon_after_over_idle" => fields_ratio(f, "after_anon_kib", "idle_anon_kib"),
                    _ => num(f, key).filter(|v| *v > 0.0),
                };
                match value {
                    Some(v) if key.ends_with("_over_idle") => (format!("{v:.2}×"), Some(v)),
                    Some(v) => (format!("{:.*}", digits, v / scale), Some(v)),
                    None => ("n/a".to_owned(), None),
                }
            })
            .collect()
    };
    if shown.iter().any(|(s, _)| get(s, "memory").is_some()) {
        // The sessions the memory case opened (BENCH_SESSIONS), as the most any server took.
        let opened = shown
            .iter()
            .filter_map(|(s, _)| num(get(s, "memory"), "opened"))
            .fold(0.0, f64::max);
        let open_title = format!(" | {} open sessions, MiB", thousands(opened));
        let rows = [
            ("server RSS | idle, MiB", "idle_kib", 1024.0, 1),
            (open_title.as_str(), "full_kib", 1024.0, 1),
            (" | per open session, KiB", "per_session", 1.0, 1),
            (
                " | after all sessions closed (1 s after the last DELETE), MiB",
                "after_kib",
                1024.0,
                1,
            ),
            (" | after closed / idle", "after_over_idle", 1.0, 2),
            (
                " | idle, anonymous only (RssAnon), MiB",
                "idle_anon_kib",
                1024.0,
                1,
            ),
            (
                " | after all sessions closed, anonymous only (RssAnon), MiB",
                "after_anon_kib",
                1024.0,
                1,
            ),
            (
                " | after closed / idle, anonymous only",
                "anon_after_over_idle",
                1.0,
                2,
            ),
        ];
        for (title, key, scale, digits) in rows {
            let values = row(&mut out, title, &shown, &memory(key, scale, digits));
            let name = title
                .trim_start_matches("server RSS")
                .trim_start_matches(" | ");
            compared.push(Compared {
                label: format!("server RSS, {name}"),
                values,
                higher_is_better: false,
            });
        }
    }
    if let Some(base) = base {
        out.push_str(&base_summary(base, &compared));
    }
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
    if let Some(redis) = redis {
        out.push_str(&redis);
    }
    out
}

#[cfg(test)]
mod tests;
