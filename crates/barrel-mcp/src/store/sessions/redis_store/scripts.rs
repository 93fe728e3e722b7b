//! The Lua scripts of the session store: each runs atomically in Redis, in one round trip
//! (`EVALSHA`, loaded again transparently after a Redis restart).
//!
//! - `CREATE` checks the caps and writes the session with its cap entries, or writes nothing;
//! - `UPDATE` applies one change to a session that exists (a subscription under its cap, a
//!   new GET owner only in place of the expected one);
//! - `TOUCH` gives a session, its subscriptions and its cap entries a new expiry;
//! - `DELETE` forgets a session and its cap entries (or, when asked, only one never
//!   initialized).
//!
//! Time is Redis's (`TIME`), in milliseconds: a key's expiry and its cap entries' scores are
//! the same number, so a session leaves the caps exactly when its keys expire, whatever the
//! nodes' clocks say. Cap entries whose score is past are dropped before counting. Every
//! number given to a command is formatted as an integer (`%d`), never left to Lua's float
//! formatting. The scripts need Redis 7 (`PEXPIRETIME`).

use redis::Script;

/// What every script starts with: the time, a cap entry written with the key's expiry pushed
/// out to its longest-lived member, and a quota key rebuilt from a digest read back from Redis
/// (only if it is one: 32 lowercase hex digits).
const COMMON: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function add(key, expiry, member)
  local at = string.format('%d', expiry)
  redis.call('ZADD', key, at, member)
  if redis.call('PEXPIRETIME', key) < expiry then
    redis.call('PEXPIREAT', key, at)
  end
end
local function quota_key(prefix, tag)
  if type(tag) == 'string' and #tag == 32 and not string.find(tag, '[^0-9a-f]') then
    return prefix .. '{' .. tag .. '}'
  end
  return nil
end
";

/// `CREATE` (keys: session, subscriptions, all[, quota]; args: ttl ms, total cap, quota cap,
/// id, the number n of subscriptions, n subscriptions, then the hash's fields and values).
/// Returns 0 when created, 1 when the session exists, 2 when the quota's cap is reached, 3
/// when the total cap is.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
local now = now_ms()
local expiry = now + tonumber(ARGV[1])
local live = string.format('(%d', now)
if #KEYS == 4 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', live)
  if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[3]) then return 2 end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', live)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[2]) then return 3 end
local at = string.format('%d', expiry)
local n = tonumber(ARGV[5])
redis.call('DEL', KEYS[2])
for i = 6, 5 + n do
  redis.call('SADD', KEYS[2], ARGV[i])
end
if n > 0 then redis.call('PEXPIREAT', KEYS[2], at) end
redis.call('HSET', KEYS[1], unpack(ARGV, 6 + n))
redis.call('PEXPIREAT', KEYS[1], at)
add(KEYS[3], expiry, ARGV[4])
if #KEYS == 4 then add(KEYS[4], expiry, ARGV[4]) end
return 0
";

/// `UPDATE` (keys: session, subscriptions; args: what, then its operands: `h` field value
/// sets a field of the hash, `s` uri subscribes, `u` uri unsubscribes, `g` expected new sets
/// the GET owner (field `g`) to `new` if it is `expected`, the empty string meaning none).
/// Returns 1 when applied, 0 when there is no such session, -1 when a subscription is past the
/// session's cap (field `ms`), -2 when the session's hash is not one this store wrote (no cap,
/// no expiry), -3 when the GET owner is not the expected one.
/// The session's expiry stays as it was; a new subscriptions set gets it.
const UPDATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local what = ARGV[1]
if what == 'h' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  return 1
elseif what == 's' then
  if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then return 1 end
  local cap = tonumber(redis.call('HGET', KEYS[1], 'ms'))
  local at = redis.call('PEXPIRETIME', KEYS[1])
  if cap == nil or at < 0 then return -2 end
  if redis.call('SCARD', KEYS[2]) >= cap then return -1 end
  redis.call('SADD', KEYS[2], ARGV[2])
  redis.call('PEXPIREAT', KEYS[2], at)
  return 1
elseif what == 'u' then
  redis.call('SREM', KEYS[2], ARGV[2])
  return 1
elseif what == 'g' then
  local owner = redis.call('HGET', KEYS[1], 'g') or ''
  if owner ~= ARGV[2] then return -3 end
  redis.call('HSET', KEYS[1], 'g', ARGV[3])
  return 1
end
return -2
";

/// `TOUCH` (keys: session, subscriptions, all; args: ttl ms, id, quota prefix). Returns 1
/// when the session's keys and cap entries expire `ttl` from now, 0 when there is no such
/// session.
const TOUCH: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local expiry = now_ms() + tonumber(ARGV[1])
local at = string.format('%d', expiry)
redis.call('PEXPIREAT', KEYS[1], at)
redis.call('PEXPIREAT', KEYS[2], at)
add(KEYS[3], expiry, ARGV[2])
local quota = quota_key(ARGV[3], redis.call('HGET', KEYS[1], 'qt'))
if quota then add(quota, expiry, ARGV[2]) end
return 1
";

/// `DELETE` (keys: session, subscriptions, all; args: id, quota prefix, `1` to delete only a
/// session whose `initialized` was not received). Returns 1 when the session was there (and
/// deleted), 0 when not (none of its keys or cap entries are left) or when it was initialized
/// and the third argument is `1` (nothing written).
const DELETE: &str = r"
if ARGV[3] == '1' and redis.call('HGET', KEYS[1], 'i') == '1' then return 0 end
local quota = quota_key(ARGV[2], redis.call('HGET', KEYS[1], 'qt'))
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
if quota then redis.call('ZREM', quota, ARGV[1]) end
return existed
";

/// The store's scripts, hashed once.
pub(super) struct Scripts {
    pub(super) create: Script,
    pub(super) update: Script,
    pub(super) touch: Script,
    pub(super) delete: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{COMMON}{body}"));
        Self {
            create: script(CREATE),
            update: script(UPDATE),
            touch: script(TOUCH),
            delete: script(DELETE),
        }
    }
}
