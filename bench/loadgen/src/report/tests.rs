//! Tests of the results table: number formatting, ratios, the optional columns, the summaries
//! against a base and the choice of the median round.

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
    assert!(table.contains("| 200 | 100 | 2.00× |"), "{table}");
    assert!(table.contains("0.100 / 0.900"), "{table}");
}

#[test]
fn floor_column_and_ratio() {
    let tsv = "barrel-mcp\tsse64\trps=200\tp50_us=100\tp99_us=900\tcpu_us=20\n\
               rmcp\tsse64\trps=100\tp50_us=200\tp99_us=800\tcpu_us=40\n\
               floor\tsse64\trps=400\tp50_us=50\tp99_us=90\tcpu_us=10\n";
    let table = table(tsv);
    assert!(
        table.contains("| barrel-mcp / rmcp | barrel-mcp / floor |"),
        "{table}"
    );
    assert!(
        table.contains("| 200 | 100 | 400 | 2.00× | 0.50× |"),
        "{table}"
    );
    assert!(
        table.contains("| 20 | 40 | 10 | 0.50× | 2.00× |"),
        "{table}"
    );
    assert!(!table.contains("TypeScript SDK"), "{table}");
    let chart = chart_data(tsv);
    assert!(
        chart.contains("64 conns, stateful, SSE replies\tfloor\t400.0\t10.00"),
        "{chart}"
    );
}

#[test]
fn redis_column_and_summary() {
    let tsv = "barrel-mcp\tsse64\trps=40000\tcpu_us=20\n\
               barrel-mcp+redis\tsse64\trps=20000\tcpu_us=45\n\
               barrel-mcp+redis\tsessions8\trps=5100\n\
               rmcp\tsse64\trps=16000\tcpu_us=60\n";
    let table = table(tsv);
    assert!(
        table.contains("| case | metric | barrel-mcp | barrel-mcp, Redis | rmcp |"),
        "{table}"
    );
    assert!(
        table.contains("| req/s | 40,000 | 20,000 | 16,000 | 2.50× |"),
        "{table}"
    );
    assert!(
        table.contains(
            "Sessions in Redis (64 conns, SSE replies): 20,000 req/s, 0.50x the memory \
             column and 1.25x rmcp; session creation 5,100 per s."
        ),
        "{table}"
    );
    assert!(!super::table("barrel-mcp\tsse64\trps=1\n").contains("Sessions in Redis"));
}

#[test]
fn memory_after_and_stdio_rows() {
    let tsv = "barrel-mcp\tmemory\tidle_kib=10240\tfull_kib=30720\tafter_kib=15360\topened=1000\t\
               idle_anon_kib=1024\tafter_anon_kib=1536\n\
               rmcp\tmemory\tidle_kib=5120\tfull_kib=56320\tafter_kib=10240\topened=1000\t\
               idle_anon_kib=512\tafter_anon_kib=5120\n\
               barrel-mcp\tcold\tp50_us=4000\tmin_us=3000\tmax_us=9000\truns=20\tcpu_us=2500\n\
               rmcp\tstdio-pipelined\trps=50000\twall_us=200000\tcpu_us=15.5\n";
    let table = table(tsv);
    assert!(table.contains("| 15.0 | 10.0 | 1.50× |"), "{table}");
    assert!(
        table.contains("| after closed / idle | 1.50× | 2.00× | 0.75× |"),
        "{table}"
    );
    assert!(
        table.contains(
            "| after all sessions closed, anonymous only (RssAnon), MiB | 1.5 | 5.0 | 0.30× |"
        ),
        "{table}"
    );
    assert!(
        table.contains("| after closed / idle, anonymous only | 1.50× | 10.00× | 0.15× |"),
        "{table}"
    );
    assert!(
        table.contains("| 1,000 open sessions, MiB | 30.0 | 55.0 |"),
        "{table}"
    );
    assert!(
        table.contains("| median wall ms | 4.0 | n/a | — |"),
        "{table}"
    );
    assert!(table.contains("| calls/s | n/a | 50,000 | — |"), "{table}");
    assert!(table.contains("| 200.0 |"), "{table}");
}

#[test]
fn base_column_ratio_and_summary() {
    let tsv = "barrel-mcp\tsse64\trps=90\tp50_us=100\tp99_us=900\tcpu_us=20\n\
               barrel-mcp@15c34b7\tsse64\trps=100\tp50_us=100\tp99_us=900\tcpu_us=10\n\
               rmcp\tsse64\trps=50\tp50_us=200\tp99_us=800\tcpu_us=40\n\
               floor\tsse64\trps=400\tp50_us=50\tp99_us=90\tcpu_us=10\n\
               barrel-mcp\tseq1\trps=100\n\
               barrel-mcp@15c34b7\tseq1\trps=104\n\
               barrel-mcp\tsessionless64\trps=100\treply=json\n\
               barrel-mcp-jwt\tsse64-jwt\trps=80\tcpu_us=25\n\
               barrel-mcp\tmemory\tidle_kib=10240\tfull_kib=30720\tafter_kib=15360\topened=1000\n\
               barrel-mcp@15c34b7\tmemory\tidle_kib=10240\tfull_kib=20480\tafter_kib=15360\topened=1000\n";
    let table = table(tsv);
    assert!(
        table.contains(
            "| case | metric | barrel-mcp | barrel-mcp@15c34b7 | rmcp | floor | \
             barrel-mcp / rmcp | barrel-mcp / floor | barrel-mcp / base |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
        ),
        "{table}"
    );
    assert!(
        table.contains("| req/s | 90 | 100 | 50 | 400 | 1.80× | 0.23× | 0.90× |"),
        "{table}"
    );
    assert!(
        table.contains("| 20 | 10 | 40 | 10 | 0.50× | 2.00× | 2.00× |"),
        "{table}"
    );
    // The sessionless case the base could not run: n/a, no ratio, not compared.
    assert!(
        table.contains("| req/s | 100 | n/a | n/a | n/a | — | — | — |"),
        "{table}"
    );
    assert!(
        table.contains(
            "Worse than the base (barrel-mcp@15c34b7) by more than 5% (throughput and \
             memory rows): 64 conns, stateful, SSE replies, req/s 0.90×; \
             server RSS, 1,000 open sessions, MiB 1.50×; server RSS, per open session, KiB 2.00×. \
             Not compared (n/a in either column): 64 conns, 2025-11-25 sessionless, req/s; \
             server RSS, idle, anonymous only (RssAnon), MiB; server RSS, after all sessions \
             closed, anonymous only (RssAnon), MiB; server RSS, after closed / idle, anonymous \
             only."
        ),
        "{table}"
    );
    // seq1 is 4% worse: within the tolerance, so not listed.
    assert!(!table.contains("1 conn, sequential, req/s"), "{table}");
    assert!(!table.contains("barrel-mcp-jwt |"), "{table}");
    let chart = chart_data(tsv);
    assert!(
        chart.contains(
            "64 conns, stateful, SSE replies\tbarrel-mcp\t90.0\t20.00\n\
             64 conns, stateful, SSE replies\tbarrel-mcp@15c34b7\t100.0\t10.00\n"
        ),
        "{chart}"
    );
}

#[test]
fn base_summary_none() {
    let tsv = "barrel-mcp\tsse64\trps=100\n\
               barrel-mcp@abc1234\tsse64\trps=100\n";
    let table = table(tsv);
    assert!(
        table.contains("(throughput and memory rows): none.\n"),
        "{table}"
    );
    assert!(!table.contains("Not compared"), "{table}");
    // Without a base: no base column, ratio or summary.
    let table = super::table("barrel-mcp\tsse64\trps=100\nrmcp\tsse64\trps=50\n");
    assert!(!table.contains("base"), "{table}");
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
