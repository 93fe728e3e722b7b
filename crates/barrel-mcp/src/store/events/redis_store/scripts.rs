//! The Lua scripts of the Redis event store: each runs atomically in Redis, in one round trip
//! (`EVALSHA`, loaded again transparently after a Redis restart).
//!
//! A stream's record in the session's table (`P:s:{sid}:st`, field = the stream number in
//! decimal) is `<state>|<latest seq>|<bytes held>|<producer tag>|<request id JSON or empty>`,
//! where `<state>` is `o` (open) or `d<ms>` (finished; gone at that Redis time, in ms). Stream
//! numbers stay strings in Lua: tagged ones exceed the 2^53 a Lua number holds exactly.
//!
//! Expiry instants come from Redis's own clock (`TIME`), so every node agrees on them.

use redis::Script;

/// Redis's clock in milliseconds, for the scripts that need it.
const NOW: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
";

/// `OPEN` (keys: the table, the stream's events; args: stream, `<producer>|<request>`,
/// max streams, session TTL ms, table TTL ms, the events key prefix). Returns 1 when created,
/// 2 when it existed (its info replaced, an open stream's events kept another session TTL), 0
/// when the session is full of open streams, -1 when a record is unreadable.
const OPEN: &str = r"
local function drop(stream)
  redis.call('HDEL', KEYS[1], stream)
  redis.call('DEL', ARGV[6] .. stream)
end
local record = redis.call('HGET', KEYS[1], ARGV[1])
if record then
  local head = string.match(record, '^([od]%d*|%d+|%d+)|')
  if not head then return -1 end
  local done = string.match(head, '^d(%d+)')
  if done and tonumber(done) <= now_ms() then
    drop(ARGV[1])
  else
    redis.call('HSET', KEYS[1], ARGV[1], head .. '|' .. ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    if not done then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
    return 2
  end
end
local max = tonumber(ARGV[3])
local count = redis.call('HLEN', KEYS[1])
if count >= max then
  local now = now_ms()
  local all = redis.call('HGETALL', KEYS[1])
  local finished = {}
  for i = 1, #all, 2 do
    local done = string.match(all[i + 1], '^d(%d+)|')
    if done then
      done = tonumber(done)
      if done <= now then
        drop(all[i])
        count = count - 1
      elseif all[i] ~= '0' then
        table.insert(finished, {done, all[i]})
      end
    end
  end
  table.sort(finished, function(a, b) return a[1] < b[1] end)
  local next = 1
  while count >= max and next <= #finished do
    drop(finished[next][2])
    count = count - 1
    next = next + 1
  end
  if count >= max then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], 'o|0|0|' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
";

/// `APPEND` (keys: the table, the stream's events, the GET stream's events; args: stream,
/// data, last `0`/`1`, max events, max bytes, session TTL ms, finished TTL ms, table TTL ms,
/// channel). Returns the event's sequence number, 0 when there is no open stream by that
/// number, -1 when its record or events are unreadable.
///
/// Assigns the next sequence number, adds the event (entry id `0-<seq>`, field `d`), drops the
/// oldest events beyond the bounds (exactly: `XTRIM MINID` without `~`; the newest is always
/// kept), keeps the stream another session TTL (or, on `last`, marks it finished and shortens
/// its TTL to the finished TTL), keeps the table and the GET stream another session TTL, and
/// publishes `e <stream> <seq> <last>\n<data>` on the session's channel.
const APPEND: &str = r"
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return 0 end
local state, latest, bytes, info = string.match(record, '^([od])%d*|(%d+)|(%d+)|(.*)$')
if not state then return -1 end
if state == 'd' then return 0 end
local seq = tonumber(latest) + 1
local id = string.format('%.0f', seq)
local held = redis.call('XLEN', KEYS[2])
bytes = tonumber(bytes)
if held == 0 then bytes = 0 end
local added = redis.pcall('XADD', KEYS[2], '0-' .. id, 'd', ARGV[2])
if type(added) == 'table' and added.err then return -1 end
held = held + 1
bytes = bytes + #ARGV[2]
local max_events, max_bytes = tonumber(ARGV[4]), tonumber(ARGV[5])
local dropped = nil
while held > max_events or (bytes > max_bytes and held > 1) do
  local start = '-'
  if dropped then start = '(0-' .. string.format('%.0f', dropped) end
  local batch = redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', math.max(held - max_events, 1))
  if #batch == 0 then return -1 end
  for _, entry in ipairs(batch) do
    if not (held > max_events or (bytes > max_bytes and held > 1)) then break end
    local n = tonumber(string.match(entry[1], '^0%-(%d+)$'))
    if not n then return -1 end
    local fields = entry[2]
    for i = 2, #fields, 2 do bytes = bytes - #fields[i] end
    held = held - 1
    dropped = n
  end
end
if held == 0 then
  redis.call('DEL', KEYS[2])
elseif dropped then
  redis.call('XTRIM', KEYS[2], 'MINID', '0-' .. string.format('%.0f', dropped + 1))
end
if ARGV[3] == '1' then
  state = 'd' .. string.format('%.0f', now_ms() + tonumber(ARGV[7]))
  redis.call('PEXPIRE', KEYS[2], ARGV[7])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
redis.call('HSET', KEYS[1], ARGV[1], state .. '|' .. id .. '|' .. string.format('%.0f', bytes) .. '|' .. info)
redis.call('PEXPIRE', KEYS[1], ARGV[8])
if ARGV[1] ~= '0' then
  local get = redis.call('HGET', KEYS[1], '0')
  if get and string.sub(get, 1, 1) == 'o' then redis.call('PEXPIRE', KEYS[3], ARGV[6]) end
end
redis.call('PUBLISH', ARGV[9], 'e ' .. ARGV[1] .. ' ' .. id .. ' ' .. ARGV[3] .. '\n' .. ARGV[2])
return seq
";

/// `FORGET` (keys: the table; args: the events key prefix). Deletes every stream's events and
/// the table.
const FORGET: &str = r"
for _, stream in ipairs(redis.call('HKEYS', KEYS[1])) do
  redis.call('DEL', ARGV[1] .. stream)
end
redis.call('DEL', KEYS[1])
return 1
";

/// The store's scripts, hashed once.
pub(super) struct Scripts {
    pub(super) open: Script,
    pub(super) append: Script,
    pub(super) forget: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            open: Script::new(&format!("{NOW}{OPEN}")),
            append: Script::new(&format!("{NOW}{APPEND}")),
            forget: Script::new(FORGET),
        }
    }
}
