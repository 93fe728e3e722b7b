//! A small server-sent events decoder with a bounded event size.
//!
//! Bytes go in as they arrive; whole events come out. Lines end with `\n` or `\r\n`. Comments
//! (`:`) and unknown fields are skipped. The decoder remembers the last event id and the last
//! `retry`, which outlive the event that set them, as the SSE rules say. An event (or a line)
//! larger than the limit is skipped up to the blank line that ends it, and reported once, so
//! memory stays bounded whatever the server sends.

use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event:` type; `None` means `message`.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// What one call to [`SseDecoder::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// A whole event.
    Event(Event),
    /// An event larger than the limit was skipped.
    TooLarge,
}

/// The decoder state of one stream.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    max_event_size: usize,
    /// The current, unfinished line.
    line: Vec<u8>,
    /// True once the current line has a byte other than `\r` (even when it is being skipped).
    line_has_text: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    /// Bytes of the current event so far.
    size: usize,
    /// Skipping the rest of an oversized event.
    skipping: bool,
    /// The id of the last event dispatched: where a resumption starts.
    last_event_id: Option<String>,
    /// The id the event being read sets, committed when it is dispatched (an event cut off
    /// before its blank line was never received, so a resumption must ask for it again).
    pending_id: Option<String>,
    retry: Option<Duration>,
    /// Events completed so far (with data or not), oversized ones included.
    events: u64,
}

impl SseDecoder {
    pub(crate) fn new(max_event_size: usize) -> Self {
        Self {
            max_event_size,
            line: Vec::new(),
            line_has_text: false,
            data: String::new(),
            has_data: false,
            event: None,
            size: 0,
            skipping: false,
            last_event_id: None,
            pending_id: None,
            retry: None,
            events: 0,
        }
    }

    /// Starts with a known last event id (a resumed stream keeps the old one until it sends a
    /// new one).
    pub(crate) fn with_last_event_id(mut self, id: Option<String>) -> Self {
        self.pending_id.clone_from(&id);
        self.last_event_id = id;
        self
    }

    /// The id of the last complete event that set one.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The last reconnection time the server asked for.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// How many events the stream has carried (a priming event counts).
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// Feeds a chunk; appends what it completes to `out`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Item>) {
        while !chunk.is_empty() {
            let (part, rest, ended) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &[][..], false),
            };
            chunk = rest;
            self.line_has_text |= part.iter().any(|&b| b != b'\r');
            self.size = self.size.saturating_add(part.len() + usize::from(ended));
            if self.size > self.max_event_size {
                if !self.skipping {
                    // Reported at once: the rest of the event may never come.
                    out.push(Item::TooLarge);
                }
                self.skipping = true;
                self.line = Vec::new();
                self.data = String::new();
            }
            if !self.skipping {
                self.line.extend_from_slice(part);
            }
            if ended {
                self.end_line(out);
            }
        }
    }

    fn end_line(&mut self, out: &mut Vec<Item>) {
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if !std::mem::take(&mut self.line_has_text) {
            self.dispatch(out);
            return;
        }
        if self.skipping {
            return;
        }
        let line = String::from_utf8_lossy(&line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*line, ""),
        };
        match field {
            "" => {} // a comment
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            // An empty id clears the resumption point (no `Last-Event-ID` is sent).
            "id" if !value.contains('\0') => {
                self.pending_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }

    /// A blank line ends the event.
    fn dispatch(&mut self, out: &mut Vec<Item>) {
        // As the SSE standard says: the id an event set counts once the event is whole.
        if self.pending_id != self.last_event_id {
            self.last_event_id.clone_from(&self.pending_id);
        }
        let data = std::mem::take(&mut self.data);
        let event = self.event.take();
        let has_data = std::mem::take(&mut self.has_data);
        self.size = 0;
        let skipped = std::mem::take(&mut self.skipping);
        if skipped || has_data || event.is_some() {
            self.events += 1;
        }
        if !skipped && has_data {
            out.push(Item::Event(Event { event, data }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(decoder: &mut SseDecoder, input: &[u8]) -> Vec<Item> {
        let mut out = Vec::new();
        decoder.feed(input, &mut out);
        out
    }

    fn event(data: &str) -> Item {
        Item::Event(Event {
            event: None,
            data: data.into(),
        })
    }

    #[test]
    fn events_split_anywhere() {
        let text = b"id: s.0\nretry: 500\ndata:\n\n: keep-alive\n\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n";
        let mut whole = SseDecoder::new(1024);
        let all = decode(&mut whole, text);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0], event(""));
        assert_eq!(
            all[1],
            Item::Event(Event {
                event: Some("message".into()),
                data: "{\"a\":\n1}".into()
            })
        );
        assert_eq!(whole.last_event_id(), Some("s.0"));
        assert_eq!(whole.retry(), Some(Duration::from_millis(500)));
        let mut bytewise = SseDecoder::new(1024);
        let mut out = Vec::new();
        for b in text {
            bytewise.feed(std::slice::from_ref(b), &mut out);
        }
        assert_eq!(out, all);
    }

    #[test]
    fn an_event_cut_off_before_its_end_does_not_move_the_resumption_point() {
        let mut decoder = SseDecoder::new(1024).with_last_event_id(Some("s.6".into()));
        assert!(decode(&mut decoder, b"id: s.7\ndata: {\"a\":1}\n").is_empty());
        // The stream ends here: a resumption must ask again for s.7.
        assert_eq!(decoder.last_event_id(), Some("s.6"));
        assert_eq!(decode(&mut decoder, b"\n"), [event("{\"a\":1}")]);
        assert_eq!(decoder.last_event_id(), Some("s.7"));
        // A priming event (an id and no data) moves it too, once whole.
        decode(&mut decoder, b"id: s.8\ndata:\n");
        assert_eq!(decoder.last_event_id(), Some("s.7"));
        decode(&mut decoder, b"\n");
        assert_eq!(decoder.last_event_id(), Some("s.8"));
        // An empty id clears it, as the SSE standard says.
        decode(&mut decoder, b"id:\ndata: x\n\n");
        assert_eq!(decoder.last_event_id(), None);
    }

    #[test]
    fn oversized_events_are_skipped_and_reported() {
        let mut decoder = SseDecoder::new(16);
        let mut input = b"data: ".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend_from_slice(b"\ndata: more\n\ndata: ok\n\n");
        let out = decode(&mut decoder, &input);
        assert_eq!(out, vec![Item::TooLarge, event("ok")]);
        assert!(decoder.line.capacity() <= 64);
        assert_eq!(decoder.events(), 2);
    }

    #[test]
    fn an_oversized_event_is_reported_before_it_ends() {
        // A server that never finishes the event must not leave the reader waiting.
        let mut decoder = SseDecoder::new(16);
        let out = decode(&mut decoder, &[b'x'; 40]);
        assert_eq!(out, vec![Item::TooLarge]);
        assert!(
            decode(&mut decoder, &[b'x'; 40]).is_empty(),
            "reported once"
        );
        assert!(decode(&mut decoder, b"\n\n").is_empty());
    }

    #[test]
    fn events_are_counted_comments_are_not() {
        let mut decoder = SseDecoder::new(1024);
        decode(&mut decoder, b": keep-alive\n\n\n");
        assert_eq!(decoder.events(), 0);
        decode(&mut decoder, b"id: 1\nretry: 0\ndata:\n\nevent: x\n\n");
        assert_eq!(decoder.events(), 2);
    }
}
