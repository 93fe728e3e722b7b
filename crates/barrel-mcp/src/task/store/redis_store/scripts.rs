//! The Lua scripts of the task store: each runs atomically in Redis, in one round trip
//! (`EVALSHA`, loaded again transparently after a Redis restart).
//!
//! - `CREATE` checks the caps and writes the task with its indexes, or writes nothing;
//! - `WRITE` replaces a task's record only if its version is still the one read (the
//!   compare-and-set behind `update`, and behind failing a task whose lease ran out: that write
//!   also checks the lease is still out, so a renewal that got there first wins);
//! - `RENEW` extends a lease, unless the task has ended;
//! - `PURGE` forgets a batch of expired tasks: the record if Redis still holds it, and every
//!   index entry.
//!
//! The scripts need Redis 7 (`PEXPIRETIME`, `ZRANGE … BYSCORE`).

use redis::Script;

/// `CREATE` (keys: task, quota, all, owned; args: record, ttl ms or 0, expiry ms or `+inf`,
/// now ms, owner cap, total cap, id, cleanup entry, list member, lease end ms or empty). Returns
/// 1 when created; -1 when the owner's cap is reached, -2 the total cap, -3 when the id exists.
///
/// An index key lives as long as its longest-lived task: a fresh one gets that task's expiry,
/// a later task pushes it out, a task without TTL makes it permanent.
const CREATE: &str = r"
local function extend(key, fresh, expiry)
  if expiry == '+inf' then
    redis.call('PERSIST', key)
  elseif fresh then
    redis.call('PEXPIREAT', key, expiry)
  else
    local current = redis.call('PEXPIRETIME', key)
    if current >= 0 and current < tonumber(expiry) then
      redis.call('PEXPIREAT', key, expiry)
    end
  end
end
local function add(key, score, member, expiry)
  local fresh = redis.call('EXISTS', key) == 0
  redis.call('ZADD', key, score, member)
  extend(key, fresh, expiry)
end
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
local now = ARGV[4]
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return -1 end
if redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') >= tonumber(ARGV[6]) then return -2 end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'v', 1)
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'l', ARGV[10]) end
if ARGV[2] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
add(KEYS[2], ARGV[3], ARGV[7], ARGV[3])
add(KEYS[3], ARGV[3], ARGV[8], ARGV[3])
add(KEYS[4], 0, ARGV[9], ARGV[3])
return 1
";

/// `WRITE` (keys: task; args: the version read, the new record, `end` when the record is
/// finished (its lease ends) or empty, and empty or a time in ms: write only if the lease had
/// run out by then). Returns 1 when written, 0 when the task changed since it was read (or its
/// lease was renewed), -1 when it is gone. The TTL stays as it was.
const WRITE: &str = r"
local version = redis.call('HGET', KEYS[1], 'v')
if not version then return -1 end
if version ~= ARGV[1] then return 0 end
if ARGV[4] ~= '' then
  local lease = tonumber(redis.call('HGET', KEYS[1], 'l'))
  if not lease or lease > tonumber(ARGV[4]) then return 0 end
end
redis.call('HSET', KEYS[1], 'r', ARGV[2])
if ARGV[3] == 'end' then redis.call('HSET', KEYS[1], 'l', 'end') end
redis.call('HINCRBY', KEYS[1], 'v', 1)
return 1
";

/// `RENEW` (keys: task; args: the lease's new end, ms). Returns 1 when renewed (a lease is
/// never shortened), 0 when the task has ended, -2 when it holds no lease, -1 when it is gone.
/// The record and its version stay as they were.
const RENEW: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local lease = redis.call('HGET', KEYS[1], 'l')
if lease == 'end' then return 0 end
if not lease then return -2 end
if tonumber(ARGV[1]) > tonumber(lease) then redis.call('HSET', KEYS[1], 'l', ARGV[1]) end
return 1
";

/// `PURGE` (keys: all; args: now ms, batch size). Forgets up to a batch of the tasks expired at
/// `now`; returns how many. Each entry of `all` is a JSON array: task key, quota key, owned
/// key, list member, id.
const PURGE: &str = r"
local expired = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
for _, entry in ipairs(expired) do
  local ok, keys = pcall(cjson.decode, entry)
  if ok and type(keys) == 'table' and #keys == 5 then
    redis.call('DEL', keys[1])
    redis.call('ZREM', keys[2], keys[5])
    redis.call('ZREM', keys[3], keys[4])
  end
  redis.call('ZREM', KEYS[1], entry)
end
return #expired
";

/// The store's scripts, hashed once.
pub(super) struct Scripts {
    pub(super) create: Script,
    pub(super) write: Script,
    pub(super) renew: Script,
    pub(super) purge: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            create: Script::new(CREATE),
            write: Script::new(WRITE),
            renew: Script::new(RENEW),
            purge: Script::new(PURGE),
        }
    }
}
