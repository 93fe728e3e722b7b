//! What the client commands show a person: progress of a `call` on stderr (a bar redrawn in
//! place on a terminal, one line per update otherwise, so logs and pipes keep every step), and
//! server-supplied text made safe for a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use barrel_mcp::types::ProgressParams;

/// The width of the bar, in cells.
const BAR_WIDTH: usize = 24;

/// Where progress goes. [`Progress::finish`] ends a bar's line before the result is printed.
#[derive(Clone)]
pub(crate) struct Progress {
    terminal: bool,
    /// True while a bar is on screen (its line not yet ended).
    drawn: Arc<AtomicBool>,
}

impl Progress {
    /// A bar when stderr is a terminal, lines otherwise.
    pub(crate) fn to_stderr() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            drawn: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Shows one update.
    pub(crate) fn show(&self, update: &ProgressParams) {
        let mut stderr = std::io::stderr().lock();
        if self.terminal {
            // Back to the line's start, clear it, draw.
            let _ = write!(stderr, "\r\x1b[2K{}", bar(update));
            self.drawn.store(true, Ordering::Relaxed);
        } else {
            let _ = writeln!(stderr, "{}", line(update));
        }
        let _ = stderr.flush();
    }

    /// Ends the bar's line, if one is drawn.
    pub(crate) fn finish(&self) {
        if self.drawn.swap(false, Ordering::Relaxed) {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// `progress: 2/3 step 2 of 3`.
pub(crate) fn line(update: &ProgressParams) -> String {
    let total = update.total.map(|t| format!("/{t}")).unwrap_or_default();
    let message = suffix(update);
    format!("progress: {}{total}{message}", update.progress)
}

/// `[################--------]  2/3  67% step 2 of 3`, or without a total (nothing to measure
/// against) `[progress 2] step 2 of 3`.
pub(crate) fn bar(update: &ProgressParams) -> String {
    let message = suffix(update);
    let Some(total) = update.total.filter(|t| t.is_finite() && *t > 0.0) else {
        return format!("[progress {}]{message}", update.progress);
    };
    let fraction = (update.progress / total).clamp(0.0, 1.0);
    // Truncation is the point: a cell is full only once reached.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let full = (fraction * BAR_WIDTH as f64) as usize;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let percent = (fraction * 100.0).round() as u32;
    format!(
        "[{}{}] {}/{total} {percent:>3}%{message}",
        "#".repeat(full),
        "-".repeat(BAR_WIDTH - full),
        update.progress,
    )
}

/// `text` as it may reach stdout: on a terminal, control characters other than newline and tab
/// become `\u{fffd}`, so a server's text cannot move the cursor, retitle the window or
/// recolour the screen; into a file or a pipe it passes unchanged.
pub(crate) fn for_terminal(text: String) -> String {
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *TERMINAL.get_or_init(|| std::io::stdout().is_terminal()) {
        defang(&text)
    } else {
        text
    }
}

/// [`for_terminal`] for stderr: error messages carry text a server chose.
pub(crate) fn for_stderr(text: String) -> String {
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *TERMINAL.get_or_init(|| std::io::stderr().is_terminal()) {
        defang(&text)
    } else {
        text
    }
}

fn defang(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

fn suffix(update: &ProgressParams) -> String {
    update
        .message
        .as_deref()
        // A server's text must not move the cursor or recolour the terminal.
        .map(|m| format!(" {}", m.replace(|c: char| c.is_control(), " ")))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(progress: f64, total: Option<f64>, message: Option<&str>) -> ProgressParams {
        serde_json::from_value(serde_json::json!({
            "progressToken": 1,
            "progress": progress,
            "total": total,
            "message": message,
        }))
        .expect("progress params")
    }

    #[test]
    fn bars_fill_with_the_fraction_done() {
        assert_eq!(
            bar(&update(1.0, Some(4.0), Some("one"))),
            "[######------------------] 1/4  25% one"
        );
        assert_eq!(
            bar(&update(4.0, Some(4.0), None)),
            "[########################] 4/4 100%"
        );
        // Beyond the total, or a total of zero or not finite: no overflow, no division.
        assert!(bar(&update(9.0, Some(4.0), None)).starts_with("[########################]"));
        assert_eq!(bar(&update(2.0, Some(0.0), None)), "[progress 2]");
        assert_eq!(bar(&update(2.0, None, Some("two"))), "[progress 2] two");
    }

    #[test]
    fn terminal_text_keeps_lines_and_tabs_only() {
        assert_eq!(
            defang("a\tb\nc\x1b]0;pwned\x07d\r"),
            "a\tb\nc\u{fffd}]0;pwned\u{fffd}d\u{fffd}"
        );
    }

    #[test]
    fn lines_and_messages_are_plain_text() {
        assert_eq!(
            line(&update(2.0, Some(3.0), Some("step 2 of 3"))),
            "progress: 2/3 step 2 of 3"
        );
        assert_eq!(
            line(&update(1.0, None, Some("a\x1b[2Jb\r\n"))),
            "progress: 1 a [2Jb  "
        );
    }
}
