//! The child's stderr: drained line by line into a bounded ring buffer and to `tracing`.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// The longest stderr line kept; the rest of a longer line is dropped.
const MAX_LINE: usize = 4096;

/// The last lines of a child's stderr.
#[derive(Debug)]
pub(super) struct StderrTail {
    capacity: usize,
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            lines: Mutex::new(VecDeque::new()),
        }
    }

    fn push(&self, line: String) {
        if self.capacity == 0 {
            return;
        }
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == self.capacity {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub(super) fn lines(&self) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect()
    }
}

/// Reads stderr until it closes, keeping memory bounded whatever the child writes.
pub(super) async fn drain(
    mut stderr: ChildStderr,
    tail: std::sync::Arc<StderrTail>,
    pid: Option<u32>,
) {
    let mut chunk = [0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let emit = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line)
            .trim_end_matches('\r')
            .to_owned();
        line.clear();
        tracing::debug!(?pid, "child stderr: {text}");
        tail.push(text);
    };
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        for &byte in &chunk[..read] {
            if byte == b'\n' {
                emit(&mut line);
            } else if line.len() < MAX_LINE {
                line.push(byte);
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line);
    }
}
