-- task_write: the record a caller made of the task it read at `seen` (the rules are the
-- caller's, in Rust), written only if the task is still at that version: a compare-and-set.
-- Nothing runs between the checks and the writes, and every check comes first.
--
-- ARGV = the write's id (fresh for each attempt); who writes: 'holder' (renew, ask, finish:
-- `token` must still hold the lease), 'owner' (cancel, respond) or 'settle' (a lease that ran
-- out, ended as lost); the version read; the holder's token ('' unless 'holder'); what the
-- task is after the write: 'running' or 'ended'; for 'running', the new lease in ms from now
-- ('' keeps the lease); the task's ttl (ms); 'signal' when its holder must act on the write;
-- the record as stored JSON ('' keeps the record); what to do when the record grows past the
-- bytes of its principal's share or of the totals: '' count it all the same, 'refuse', or
-- 'note' (keep the next argument, a record that notes the outcome instead); that note; what
-- the task weighs besides its record; bytes per principal, bytes in total.
--
-- Replies {'done'} when written, or found written by this very write (sent
-- again after its answer was lost: its id is among the task's last); {'gone'} when there is
-- no task to keep; {'lost'} when `token` no longer holds it; {'stale'} when it changed since
-- it was read, or its lease ran out since (a read settles it): read it again; {'full'} when
-- refused for its bytes.
local op, by, seen, token, state = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local renewal, ttl, signal = ARGV[6], tonumber(ARGV[7]), ARGV[8] == 'signal'
local record, bound, note, overhead = ARGV[9], ARGV[10], ARGV[11], tonumber(ARGV[12])
local share_bytes, total_bytes = tonumber(ARGV[13]), tonumber(ARGV[14])
local now = now_ms()

local f = redis.call('HMGET', KEY, 'version', 'signals', 'token', 'lease', 'forget_at',
  'weight', 'ops')
if has_op(f[7], op) then
  return { 'done' }
end
if not f[1] or (tonumber(f[5]) or 0) <= now then
  return { 'gone' }
end
local holder, lease = f[3], tonumber(f[4]) or 0
if by == 'holder' and holder ~= token then
  return { 'lost' }
end
if f[1] ~= seen then
  return { 'stale' }
end
local expired = holder ~= nil and lease <= now
if expired ~= (by == 'settle') then
  -- A lease that ran out since it was read is settled before anything else is written; and
  -- only such a lease is settled.
  return { 'stale' }
end
if state == 'running' and not holder then
  return redis.error_reply('a task that ended cannot run again: ' .. KEY)
end

local version = tonumber(f[1]) + 1
local signals = tonumber(f[2]) or 0
if signal then
  signals = signals + 1
end
if record == '' then
  record = redis.call('HGET', KEY, 'record')
end
local heft = overhead + #record
local counted = task_tallies()
if bound ~= '' and not room_for(counted, heft - (tonumber(f[6]) or 0), share_bytes, total_bytes,
    now) then
  if bound == 'refuse' then
    return { 'full' }
  end
  -- The call ran: its owner is told so, even if its outcome cannot be kept.
  record = note
  heft = overhead + #record
end

local forget_at
if state == 'running' then
  if renewal ~= '' then
    lease = now + tonumber(renewal)
    redis.call('HSET', KEY, 'lease', int(lease))
  end
  forget_at = lease + ttl
  index_lease(lease, forget_at, now)
else
  -- A lost lease ended when it ran out: its ttl counts from then, as the TTL it had says.
  local ended = now
  if by == 'settle' then
    ended = lease
  end
  forget_at = ended + ttl
  redis.call('HDEL', KEY, 'token', 'lease')
  redis.call('ZREM', LEASES, KEY)
end
redis.call('HSET', KEY, 'record', record, 'version', int(version), 'signals', int(signals),
  'forget_at', int(forget_at), 'weight', int(heft), 'ops', remember(f[7], op))
keep_until(forget_at, heft, tonumber(f[5]), counted)
return { 'done' }
