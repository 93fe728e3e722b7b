//! Directed messages on Redis: each node's inbox is a stream, `P:n:{tag}:<instance>`, named
//! by the instance that holds the tag.
//!
//! - `SEND` appends a message to the target's inbox, in one atomic script, only if the target
//!   is a member (a gone node gets nothing, and the sender hears so) and its inbox holds fewer
//!   than `inbox_capacity` unread messages (beyond, the sender hears "full" rather than a
//!   message being trimmed away unseen); it renews the inbox's expiry. The script reads the
//!   holder's instance id from the membership record `P:node:{tag}`, so a message goes to the
//!   instance that holds the tag *now*: after a failover without data, when a new node took
//!   tag T while the old holder had not noticed yet, the old holder reads its own inbox, which
//!   nobody writes to any more, and never takes (nor trims) the new holder's messages. A record
//!   this version cannot read is `Corrupt`. A failed attempt is retried with the same message
//!   id.
//! - The reader, on a connection of its own (a blocking read would stall every command behind
//!   it on the shared one), loops on `XREAD BLOCK`, resumes after the last entry it read when
//!   it reconnects, hands the messages to the [`Inbox`](crate::store::bus::Inbox) (waiting
//!   while it is full: unread messages stay in Redis), drops ids it has seen, and trims what it
//!   handed over (`XTRIM MINID` with the id after the last one read, so nothing read stays).
//!   When the node's tag changes, it reads the new tag's inbox from its start.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Script, Value};
use tokio::sync::mpsc;

use self::stream::{Entry, following, parse};
use super::Shared;
use super::node::millis;
use crate::store::bus::Directed;
use crate::store::{NodeTag, StoreError};

mod stream;

/// Entries one read takes at most.
const READ_BATCH: usize = 256;
/// Messages read from Redis that wait for the inbox's reader (more wait in Redis).
pub(super) const DELIVERY_BUFFER: usize = 64;
/// The first pause before reconnecting (doubling up to the Redis options' longest).
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(50);

/// `SEND` (keys: the target's membership; args: message id, sender tag, body, capacity, inbox
/// ttl ms, inbox stem, target tag). Returns 1 when sent, 0 when the target is not a member, -1
/// when its inbox is full, -2 when its membership record is unreadable. The inbox's name comes
/// from the record (the holder's instance id: 16 hex digits), so it is not a declared key.
static SEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('GET', KEYS[1])
if not holder then return 0 end
local ok, record = pcall(cjson.decode, holder)
if not ok or type(record) ~= 'table' or type(record.i) ~= 'string'
  or not string.match(record.i, '^' .. string.rep('%x', 16) .. '$') then
  return -2
end
local inbox = ARGV[6] .. '{' .. ARGV[7] .. '}:' .. record.i
if redis.call('XLEN', inbox) >= tonumber(ARGV[4]) then return -1 end
redis.call('XADD', inbox, '*', 'i', ARGV[1], 'f', ARGV[2], 'b', ARGV[3])
redis.call('PEXPIRE', inbox, ARGV[5])
return 1
",
    )
});

/// Sends message `id` with `body` to node `to`: `Ok(false)` when `to` is not a member.
pub(super) async fn send(
    shared: &Shared,
    to: NodeTag,
    id: &str,
    body: &[u8],
) -> Result<bool, StoreError> {
    let attempts = shared.options.send_attempts.max(1);
    let mut failure = StoreError::Unavailable("the message was not sent".into());
    for attempt in 0..attempts {
        if attempt > 0 {
            // The connection manager reconnects meanwhile.
            tokio::time::sleep(Duration::from_millis(25 << attempt.min(4))).await;
        }
        let from = *shared.tag.borrow();
        let sent: Result<i64, _> = SEND
            .key(shared.keys.node(to))
            .arg(id)
            .arg(from.get())
            .arg(body)
            .arg(shared.options.inbox_capacity)
            .arg(millis(shared.options.inbox_ttl))
            .arg(shared.keys.inbox_stem())
            .arg(to.get())
            .invoke_async(&mut shared.redis.commands())
            .await;
        match sent {
            Ok(1) => return Ok(true),
            Ok(0) => return Ok(false),
            Ok(-1) => {
                return Err(StoreError::Unavailable(format!(
                    "the inbox of node {to} is full"
                )));
            }
            Ok(-2) => {
                return Err(StoreError::Corrupt(format!(
                    "the membership record of node {to} is unreadable"
                )));
            }
            Ok(other) => {
                return Err(StoreError::Corrupt(format!(
                    "unexpected answer {other} from the send script"
                )));
            }
            Err(error) => failure = shared.redis.fail(&error),
        }
    }
    Err(failure)
}

/// Opens the reader's own connection.
pub(super) async fn connect(shared: &Shared) -> Result<MultiplexedConnection, StoreError> {
    let options = shared.redis.options();
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(options.connection_timeout))
        .set_response_timeout(Some(
            shared
                .options
                .inbox_block
                .saturating_add(options.response_timeout),
        ));
    let made = shared
        .redis
        .client()
        .get_multiplexed_async_connection_with_config(&config);
    match tokio::time::timeout(options.connection_timeout, made).await {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(error)) => Err(shared.redis.fail(&error)),
        Err(_) => Err(StoreError::Unavailable(format!(
            "the inbox connection was not made within {:?}",
            options.connection_timeout
        ))),
    }
}

/// The ids of the latest messages, to drop repeats: at most `window` of them.
struct Recent {
    ids: HashSet<String>,
    order: VecDeque<String>,
    window: usize,
}

impl Recent {
    fn new(window: usize) -> Self {
        Self {
            ids: HashSet::new(),
            order: VecDeque::new(),
            window: window.max(1),
        }
    }

    /// True the first time `id` is seen (within the window).
    fn first(&mut self, id: &str) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        self.ids.insert(id.to_owned());
        self.order.push_back(id.to_owned());
        if self.order.len() > self.window
            && let Some(old) = self.order.pop_front()
        {
            self.ids.remove(&old);
        }
        true
    }
}

/// The reader task: from `first` (then new connections) to `deliver`, until the bus stops.
pub(super) async fn run(
    shared: Arc<Shared>,
    first: MultiplexedConnection,
    deliver: mpsc::Sender<Directed>,
) {
    let mut tags = shared.tag.subscribe();
    let mut tag = *tags.borrow_and_update();
    let mut after = "0-0".to_owned();
    let mut recent = Recent::new(shared.options.dedup_window);
    let mut connection = Some(first);
    let mut delay = FIRST_RECONNECT_DELAY;
    let longest = shared
        .redis
        .options()
        .max_reconnect_delay
        .max(FIRST_RECONNECT_DELAY);
    loop {
        if tags.has_changed().unwrap_or(false) {
            tag = *tags.borrow_and_update();
            after = "0-0".to_owned();
        }
        let mut reader = match connection.take() {
            Some(reader) => reader,
            None => {
                let made = tokio::select! {
                    biased;
                    () = shared.stop.cancelled() => return,
                    made = connect(&shared) => made,
                };
                match made {
                    Ok(reader) => reader,
                    Err(error) => {
                        tracing::debug!(%error, "the bus could not reconnect its inbox");
                        if !pause(&shared, delay).await {
                            return;
                        }
                        delay = delay.saturating_mul(2).min(longest);
                        continue;
                    }
                }
            }
        };
        let key = shared.keys.inbox(tag, &shared.instance);
        let read = tokio::select! {
            biased;
            () = shared.stop.cancelled() => return,
            read = read(&shared, &mut reader, &key, &after) => read,
        };
        let entries = match read {
            Ok(entries) => entries,
            Err(error) => {
                tracing::debug!(%error, "reading the bus inbox failed");
                if !pause(&shared, delay).await {
                    return;
                }
                delay = delay.saturating_mul(2).min(longest);
                if matches!(error, StoreError::Corrupt(_)) {
                    connection = Some(reader);
                }
                continue;
            }
        };
        delay = FIRST_RECONNECT_DELAY;
        let read_any = !entries.is_empty();
        for entry in entries {
            after = entry.id;
            let Some(message) = entry.message else {
                tracing::warn!(stream_id = %after, "an unreadable message in the bus inbox, skipped");
                continue;
            };
            if !recent.first(&message.id) {
                continue;
            }
            tokio::select! {
                biased;
                () = shared.stop.cancelled() => return,
                // A dropped inbox reads nothing: the message is discarded.
                _ = deliver.send(message) => {}
            }
        }
        if read_any {
            // `MINID` keeps the entry it names: trim from the one after the last read.
            let trimmed: Result<i64, _> = redis::cmd("XTRIM")
                .arg(&key)
                .arg("MINID")
                .arg(following(&after).as_deref().unwrap_or(&after))
                .query_async(&mut reader)
                .await;
            if let Err(error) = trimmed {
                tracing::debug!(%error, "trimming the bus inbox failed");
            }
        }
        connection = Some(reader);
    }
}

/// Waits `delay` unless the bus stops first (then false).
async fn pause(shared: &Shared, delay: Duration) -> bool {
    tokio::select! {
        biased;
        () = shared.stop.cancelled() => false,
        () = tokio::time::sleep(delay) => true,
    }
}

/// The entries of `key` after stream id `after`, waiting up to `inbox_block` for one.
async fn read(
    shared: &Shared,
    reader: &mut MultiplexedConnection,
    key: &str,
    after: &str,
) -> Result<Vec<Entry>, StoreError> {
    let reply: Value = redis::cmd("XREAD")
        .arg("COUNT")
        .arg(READ_BATCH)
        .arg("BLOCK")
        .arg(millis(shared.options.inbox_block))
        .arg("STREAMS")
        .arg(key)
        .arg(after)
        .query_async(reader)
        .await
        .map_err(|e| shared.redis.fail(&e))?;
    parse(reply).ok_or_else(|| StoreError::Corrupt("an unreadable XREAD reply".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_dropped_within_the_window() {
        let mut recent = Recent::new(2);
        assert!(recent.first("a"));
        assert!(!recent.first("a"));
        assert!(recent.first("b"));
        assert!(recent.first("c"));
        // "a" left the window.
        assert!(recent.first("a"));
        assert!(recent.ids.len() <= 2 && recent.order.len() <= 2);
    }
}
