//! Membership: a node's tag and the heartbeat that keeps it.
//!
//! - `CLAIM` issues a tag: `INCR P:nodes:next` (from 1; past [`NodeTag::MAX`] it starts at 1
//!   again), then `SET P:node:{tag} NX`: a tag some live node holds is skipped, so two live
//!   nodes never share one, even after the counter was lost. The new holder's inbox
//!   (`P:n:{tag}:<instance>`) starts empty.
//! - `BEAT` renews the membership if it is this instance's; writes it again if it is missing,
//!   and says so; and reports a conflict otherwise: another instance took the tag (Redis lost
//!   its data, the counter restarted, and a new node got this tag while this one could not
//!   renew). On a conflict the node claims a new tag, gives every subscriber a gap and
//!   announces the tag on [`Bus::node_changes`](crate::store::bus::Bus::node_changes).
//!   A missing membership lapsed: the node did not beat within `heartbeat_expiry` (paused, a
//!   slow connection, a failover), so peers took it for gone meanwhile (they may have dropped
//!   answers forwarded to it, taken over its streams); the node keeps its tag but announces
//!   the renewal too, with the same tag, and every subscriber gets a
//!   [`Delivery::Gap`](crate::store::bus::Delivery::Gap), so callers re-check what they own.
//!   Each beat also keeps the counter at least at this node's tag (so a restarted counter
//!   skips past the live nodes), and renews the counter's and the inbox's expiry.
//! - `LEAVE` deletes the membership if it is still this instance's, and this instance's inbox,
//!   when the bus stops: the node is at once no longer alive.

use std::sync::Arc;
use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use super::Shared;
use crate::store::{LONGEST_TTL, NodeTag, StoreError};

/// How many tags one claim tries before it gives up (each is taken only by a live node).
const CLAIM_ATTEMPTS: u32 = 64;

/// `CLAIM` (keys: counter; args: node stem, inbox stem, record, expiry ms, counter ttl ms,
/// largest tag, attempts, instance id). Returns the tag, or 0 when every tag tried is held.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local last = tonumber(ARGV[6])
for _ = 1, tonumber(ARGV[7]) do
  local tag = redis.call('INCR', KEYS[1])
  if tag > last or tag < 1 then
    tag = 1
    redis.call('SET', KEYS[1], 1)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  if redis.call('SET', ARGV[1] .. '{' .. tag .. '}', ARGV[3], 'NX', 'PX', ARGV[4]) then
    redis.call('DEL', ARGV[2] .. '{' .. tag .. '}:' .. ARGV[8])
    return tag
  end
end
return 0
",
    )
});

/// `BEAT` (keys: membership, counter, inbox; args: record, expiry ms, counter ttl ms, inbox
/// ttl ms, tag). Returns 1 when renewed, 2 when the membership was missing and is written
/// again, 0 when another instance holds the tag.
static BEAT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local counter = tonumber(redis.call('GET', KEYS[2]) or '0')
if counter == nil or counter < tonumber(ARGV[5]) then
  redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[3])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
redis.call('PEXPIRE', KEYS[3], ARGV[4])
if holder then return 1 end
return 2
",
    )
});

/// `LEAVE` (keys: membership, this instance's inbox; args: record). Deletes the inbox, and the
/// membership if it is this instance's; returns 1 then, else 0.
static LEAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('DEL', KEYS[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
",
    )
});

/// Claims a free tag for this instance.
pub(super) async fn claim(shared: &Shared) -> Result<NodeTag, StoreError> {
    let options = &shared.options;
    let tag: i64 = CLAIM
        .key(shared.keys.counter())
        .arg(shared.keys.node_stem())
        .arg(shared.keys.inbox_stem())
        .arg(&shared.record)
        .arg(millis(options.heartbeat_expiry))
        .arg(millis(options.tag_counter_ttl))
        .arg(NodeTag::MAX)
        .arg(CLAIM_ATTEMPTS)
        .arg(&shared.instance)
        .invoke_async(&mut shared.redis.commands())
        .await
        .map_err(|e| shared.redis.fail(&e))?;
    if tag == 0 {
        return Err(StoreError::Unavailable(format!(
            "no free node tag among {CLAIM_ATTEMPTS} tried"
        )));
    }
    u32::try_from(tag)
        .ok()
        .and_then(NodeTag::new)
        .ok_or_else(|| StoreError::Corrupt(format!("the node tag counter gave {tag}")))
}

/// What one heartbeat found.
enum Beat {
    /// The membership was this instance's and is renewed.
    Renewed,
    /// The membership had lapsed and is written again.
    Recreated,
    /// Another instance holds the tag.
    Taken,
}

/// Renews the membership of `tag`.
async fn beat(shared: &Shared, tag: NodeTag) -> Result<Beat, StoreError> {
    let options = &shared.options;
    let renewed: i64 = BEAT
        .key(shared.keys.node(tag))
        .key(shared.keys.counter())
        .key(shared.keys.inbox(tag, &shared.instance))
        .arg(&shared.record)
        .arg(millis(options.heartbeat_expiry))
        .arg(millis(options.tag_counter_ttl))
        .arg(millis(options.inbox_ttl))
        .arg(tag.get())
        .invoke_async(&mut shared.redis.commands())
        .await
        .map_err(|e| shared.redis.fail(&e))?;
    match renewed {
        1 => Ok(Beat::Renewed),
        2 => Ok(Beat::Recreated),
        0 => Ok(Beat::Taken),
        other => Err(StoreError::Corrupt(format!(
            "unexpected answer {other} from the heartbeat script"
        ))),
    }
}

/// Deletes this instance's inbox under `tag`, and gives up the membership of `tag` if it is
/// still this instance's.
pub(super) async fn leave(shared: &Shared, tag: NodeTag) -> Result<(), StoreError> {
    let _: i64 = LEAVE
        .key(shared.keys.node(tag))
        .key(shared.keys.inbox(tag, &shared.instance))
        .arg(&shared.record)
        .invoke_async(&mut shared.redis.commands())
        .await
        .map_err(|e| shared.redis.fail(&e))?;
    Ok(())
}

/// The heartbeat task: renews the membership every `heartbeat_interval`, announces a lapsed
/// one it wrote again, takes a new tag on a conflict, and leaves when the bus stops.
pub(super) async fn run(shared: Arc<Shared>) {
    // Validated at start to be at least 1 ms; `interval` panics on zero.
    let period = shared
        .options
        .heartbeat_interval
        .max(Duration::from_millis(1));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is now: the claim just wrote the membership.
    tick.tick().await;
    loop {
        tokio::select! {
            biased;
            () = shared.stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        let tag = *shared.tag.borrow();
        match beat(&shared, tag).await {
            Ok(Beat::Renewed) => {}
            Ok(Beat::Recreated) => {
                tracing::warn!(
                    node = %tag,
                    "this node's membership lapsed (no heartbeat within the expiry) and is \
                     renewed: peers took it for gone meanwhile"
                );
                shared.fanout.gap_all();
                // The same tag, announced again: watchers re-check what they own.
                shared.tag.send_replace(tag);
            }
            Ok(Beat::Taken) => {
                tracing::warn!(
                    node = %tag,
                    "another bus instance holds this node's tag (Redis lost its data?); \
                     taking a new one"
                );
                match claim(&shared).await {
                    Ok(fresh) => {
                        tracing::warn!(old = %tag, new = %fresh, "this node has a new tag");
                        // While two instances held the tag, broadcasts may have been missed.
                        shared.fanout.gap_all();
                        shared.tag.send_replace(fresh);
                    }
                    Err(error) => tracing::warn!(%error, "claiming a new node tag failed"),
                }
            }
            Err(error) => tracing::debug!(node = %tag, %error, "a heartbeat failed"),
        }
    }
    let tag = *shared.tag.borrow();
    let bound = shared.redis.options().response_timeout;
    match tokio::time::timeout(bound, leave(&shared, tag)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(node = %tag, %error, "leaving the bus failed"),
        Err(_) => tracing::debug!(node = %tag, "leaving the bus timed out"),
    }
}

/// `duration` in whole milliseconds, at least 1 (Redis refuses `PX 0`) and at most
/// [`LONGEST_TTL`]'s (Redis refuses an expiry past its clock's range). The options are
/// validated at start; this keeps any value safe all the same.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.min(LONGEST_TTL).as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}
