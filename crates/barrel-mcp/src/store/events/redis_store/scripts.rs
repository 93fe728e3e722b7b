//! The Lua scripts of the Redis event store: each runs atomically in Redis, in one round trip
//! (`EVALSHA`, loaded again transparently after a Redis restart).
//!
//! A stream's record in the session's table (`P:s:{sid}:st`, field = the stream number in
//! decimal) is `<state><until>|<latest seq>|<bytes held>|<producer tag>|<request id JSON or
//! empty>`, where `<state>` is `o` (open) or `d` (finished) and `<until>` the Redis time in ms
//! at which the stream is gone: an open stream `session_ttl` after its last `open` or event,
//! a finished one `finished_stream_ttl` after its last event. A stream past its `<until>` is gone whatever
//! its state: no append, no replay, and the next `OPEN` of the session forgets it. Stream
//! numbers stay strings in Lua: tagged ones exceed the 2^53 a Lua number holds exactly.
//!
//! The session's `P:s:{sid}:full` (a string, when present) says the session is full of
//! streams none of which can go before the key expires (it expires at the earliest `<until>`
//! of them, and a stream that finishes deletes it): `OPEN` then refuses at once, without
//! reading every record again.
//!
//! Expiry instants come from Redis's own clock (`TIME`), so every node agrees on them. A script
//! that refuses (returns -1) has written nothing.

use redis::Script;

/// Redis's clock in milliseconds, and numbers formatted as integers (never as Lua floats),
/// for every script.
const COMMON: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n)
  return string.format('%.0f', n)
end
";

/// `OPEN` (keys: the table, the stream's events, the session's full mark, the stream's
/// one-event key; args: stream, `<producer>|<request>`, max streams, session TTL ms, table TTL
/// ms, the events key prefix). Returns 1 when created (with no events: a leftover events key
/// is deleted, and so is the full mark, which nodes with other limits could have left), 2 when
/// it existed (an open one gets the new info and its expiry starts again; a finished one, or a
/// one-event stream, stays as it is), 0 when the session is full of open streams (and the GET
/// stream), -1 when a record is unreadable.
const OPEN: &str = r"
local now = now_ms()
local function drop(stream)
  redis.call('HDEL', KEYS[1], stream)
  redis.call('DEL', ARGV[6] .. stream)
end
local record = redis.call('HGET', KEYS[1], ARGV[1])
if record then
  local state, deadline, counts = string.match(record, '^([od])(%d+)|(%d+|%d+)|')
  if not state then return -1 end
  if tonumber(deadline) <= now then
    drop(ARGV[1])
  else
    if state == 'd' then return 2 end
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    redis.call('HSET', KEYS[1], ARGV[1], 'o' .. int(now + tonumber(ARGV[4])) .. '|' .. counts .. '|' .. ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    return 2
  end
end
if redis.call('EXISTS', KEYS[4]) == 1 then return 2 end
local max = tonumber(ARGV[3])
local count = redis.call('HLEN', KEYS[1])
if count >= max then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
  local all = redis.call('HGETALL', KEYS[1])
  local finished = {}
  local earliest = nil
  for i = 1, #all, 2 do
    local state, deadline = string.match(all[i + 1], '^([od])(%d+)|')
    if state then
      deadline = tonumber(deadline)
      if deadline <= now then
        drop(all[i])
        count = count - 1
      else
        if state == 'd' and all[i] ~= '0' then
          table.insert(finished, {deadline, all[i]})
        end
        if not earliest or deadline < earliest then earliest = deadline end
      end
    end
  end
  table.sort(finished, function(a, b) return a[1] < b[1] end)
  -- A quarter of the room at once (at least one stream), so a busy session scans its table
  -- once per quarter of max streams opened, not at every open.
  local target = max - math.max(1, math.floor(max / 4))
  local next = 1
  while count > target and next <= #finished do
    drop(finished[next][2])
    count = count - 1
    next = next + 1
  end
  if count >= max then
    if #finished == 0 and earliest then
      redis.call('SET', KEYS[3], '1', 'PXAT', int(earliest))
    end
    return 0
  end
end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], 'o' .. int(now + tonumber(ARGV[4])) .. '|0|0|' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
";

/// `APPEND` (keys: the table, the stream's events, the session's full mark, the stream's
/// one-event key; args: stream, data, last `0`/`1`, max events, max bytes, session TTL ms, finished TTL
/// ms, table TTL ms, `<producer>|<request>` or empty, max streams). Returns the event's
/// sequence number, 0 when there is no open stream by that number (an open one past its expiry
/// is forgotten on the way), -1 when its record or events are unreadable (nothing written), -2
/// when it was to open the stream but the session holds max streams (the caller opens it with
/// `OPEN`, which makes room).
///
/// With the info argument (the stream's first event), a stream that is not there (or is gone)
/// is created first, as `OPEN` creates one (unless it is a one-event stream: finished); its one event needs no trimming (the newest event is
/// always kept), so nothing is read back.
///
/// Otherwise everything that can refuse is checked before the first write: the record, the type
/// of the events key, its newest entry (older than the new event's id), and the entries the
/// bounds drop. Then it adds the event (entry id `0-<seq>`, field `d`; not when the bounds keep
/// no event at all), drops the oldest events beyond the bounds (exactly: `XTRIM MINID` without
/// `~`; the newest is always kept), keeps the stream another session TTL (or, on `last`, marks
/// it finished, shortens its TTL to the finished TTL and deletes the full mark), and keeps the
/// table another session TTL.
const APPEND: &str = r"
local now = now_ms()
local record = redis.call('HGET', KEYS[1], ARGV[1])
if record and ARGV[9] ~= '' then
  local head, gone = string.match(record, '^([od](%d+)|%d+|%d+)|')
  if gone and tonumber(gone) <= now then
    redis.call('HDEL', KEYS[1], ARGV[1])
    redis.call('DEL', KEYS[2])
    record = nil
  elseif head then
    -- There, and opened again with this info, as OPEN does.
    record = head .. '|' .. ARGV[9]
  end
end
local fresh = false
if not record then
  if ARGV[9] == '' or redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[10]) then return -2 end
  redis.call('DEL', KEYS[2], KEYS[3])
  record = 'o' .. int(now + tonumber(ARGV[6])) .. '|0|0|' .. ARGV[9]
  fresh = true
end
local state, deadline, latest, bytes, info = string.match(record, '^([od])(%d+)|(%d+)|(%d+)|(.*)$')
if not state then return -1 end
if state == 'd' then return 0 end
if tonumber(deadline) <= now then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
  return 0
end
local held = 0
if not fresh then held = redis.call('XLEN', KEYS[2]) end
local seq = tonumber(latest) + 1
local id = int(seq)
local function entry_seq(entry)
  return tonumber(string.match(entry[1], '^0%-(%d+)$'))
end
bytes = tonumber(bytes)
if held == 0 then
  bytes = 0
else
  local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
  local n = newest and entry_seq(newest)
  if not n or n >= seq then return -1 end
end
local max_events, max_bytes = tonumber(ARGV[4]), tonumber(ARGV[5])
local total, weight = held + 1, bytes + #ARGV[2]
local function over()
  return total > max_events or (weight > max_bytes and total > 1)
end
local dropped, gone = nil, 0
while over() and gone < held do
  local start = '-'
  if dropped then start = '(0-' .. int(dropped) end
  local want = math.min(math.max(total - max_events, 1), held - gone)
  local batch = redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', want)
  if #batch == 0 then return -1 end
  for _, entry in ipairs(batch) do
    if not over() or gone >= held then break end
    local n = entry_seq(entry)
    if not n or n >= seq then return -1 end
    local fields = entry[2]
    for i = 2, #fields, 2 do weight = weight - #fields[i] end
    total = total - 1
    gone = gone + 1
    dropped = n
  end
end
if over() then
  redis.call('DEL', KEYS[2])
  weight = 0
else
  if held == 0 and not fresh then redis.call('DEL', KEYS[2]) end
  local added = redis.pcall('XADD', KEYS[2], '0-' .. id, 'd', ARGV[2])
  if type(added) == 'table' and added.err then return -1 end
  if dropped then redis.call('XTRIM', KEYS[2], 'MINID', '0-' .. int(dropped + 1)) end
end
if ARGV[3] == '1' then
  state = 'd' .. int(now + tonumber(ARGV[7]))
  redis.call('PEXPIRE', KEYS[2], ARGV[7])
  if not fresh then redis.call('DEL', KEYS[3]) end
else
  state = 'o' .. int(now + tonumber(ARGV[6]))
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
redis.call('HSET', KEYS[1], ARGV[1], state .. '|' .. id .. '|' .. int(weight) .. '|' .. info)
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return seq
";

/// `KEEP` (keys: the table, the stream's events; args: stream, producer tag, session TTL ms,
/// table TTL ms). Returns 1 when the stream is open, not gone, and produced by that tag (its
/// expiry starts again), 0 when not (nothing written), -1 when its record is unreadable.
const KEEP: &str = r"
local now = now_ms()
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return 0 end
local state, deadline, counts, producer, rest =
  string.match(record, '^([od])(%d+)|(%d+|%d+)|(%d+)(|.*)$')
if not state then return -1 end
if state ~= 'o' or tonumber(deadline) <= now or producer ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1],
  'o' .. int(now + tonumber(ARGV[3])) .. '|' .. counts .. '|' .. producer .. rest)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// `FINISH` (keys: the table, the stream's events, the session's full mark, the stream's
/// one-event key; args: stream, `<producer>|<request>`, finished TTL ms, table TTL ms, max
/// streams). Finishes an open stream (its events expire the finished TTL later, and the full
/// mark goes); records a stream that is not there (or is gone) finished and empty, unless the
/// session holds max streams; leaves a finished one (or a one-event stream) as it is. Returns 1, or -1 when the record is unreadable
/// (nothing written).
const FINISH: &str = r"
local now = now_ms()
local ends = int(now + tonumber(ARGV[3]))
local record = redis.call('HGET', KEYS[1], ARGV[1])
if record then
  local state, deadline, rest = string.match(record, '^([od])(%d+)(|.*)$')
  if not state then return -1 end
  if tonumber(deadline) > now then
    if state == 'd' then return 1 end
    redis.call('HSET', KEYS[1], ARGV[1], 'd' .. ends .. rest)
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    redis.call('DEL', KEYS[3])
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return 1
  end
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
end
if redis.call('EXISTS', KEYS[4]) == 1 then return 1 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then return 1 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], 'd' .. ends .. '|0|0|' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// `FORGET` (keys: the table, the session's full mark; args: the events key prefix). Deletes
/// every stream's events, the table and the mark.
const FORGET: &str = r"
for _, stream in ipairs(redis.call('HKEYS', KEYS[1])) do
  redis.call('DEL', ARGV[1] .. stream)
end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
";

/// The store's scripts, hashed once.
pub(super) struct Scripts {
    pub(super) open: Script,
    pub(super) append: Script,
    pub(super) keep: Script,
    pub(super) finish: Script,
    pub(super) forget: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            open: Script::new(&format!("{COMMON}{OPEN}")),
            append: Script::new(&format!("{COMMON}{APPEND}")),
            keep: Script::new(&format!("{COMMON}{KEEP}")),
            finish: Script::new(&format!("{COMMON}{FINISH}")),
            forget: Script::new(FORGET),
        }
    }
}
