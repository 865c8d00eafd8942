#!lua flags=no-writes
-- task_read: a task as kept, with Redis's clock, of one moment. `no-writes`: it runs on a
-- server out of memory too. It settles nothing: a lease that ran out is ended by the caller,
-- whose rules make the record, through task_write.
--
-- KEYS[1] = the task's hash.
--
-- Replies {'none', now} when there is no task to keep (its hash is gone, or its time is up:
-- Redis keeps a key through the last millisecond of its TTL, the store does not); or
-- {'found', now, version, signals, token ('' once it ended), lease's end ('0' once it
-- ended), record}. Times are milliseconds since the epoch.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local now_text = string.format('%.0f', now)
local f = redis.call('HMGET', KEYS[1], 'record', 'version', 'signals', 'token', 'lease',
  'forget_at')
if not f[1] or (tonumber(f[6]) or 0) <= now then
  return { 'none', now_text }
end
return { 'found', now_text, f[2] or '0', f[3] or '0', f[4] or '', f[5] or '0', f[1] }
