-- task_create: a new task, held by `token` under a lease of `lease` ms from now, kept until
-- the lease's end plus the task's ttl (each renewal moves both on).
--
-- ARGV = the write's id, the token, the lease (ms), the task's ttl (ms), its record as
-- stored JSON, what the task weighs besides its record, then the bounds: tasks and bytes per
-- principal, tasks and bytes in total.
--
-- Replies {'created'} (also to this very create, sent again after its answer was lost);
-- {'exists'} when a task of this key is kept; or {'full', 'share' | 'total', tasks, bytes}.
local op, token, lease_ms, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local record, overhead = ARGV[5], tonumber(ARGV[6])
local share_tasks, share_bytes = tonumber(ARGV[7]), tonumber(ARGV[8])
local total_tasks, total_bytes = tonumber(ARGV[9]), tonumber(ARGV[10])
local now = now_ms()

local f = redis.call('HMGET', KEY, 'forget_at', 'ops')
if f[1] then
  if has_op(f[2], op) then
    return { 'created' }
  end
  if tonumber(f[1]) > now then
    return { 'exists' }
  end
  -- Its time is up, and Redis has not removed it yet.
  forget()
  redis.call('ZREM', LEASES, KEY)
end

local heft = overhead + #record
-- Room for one more, in the principal's share and in the totals.
local counted, refused = room(share_tasks, share_bytes, total_tasks, total_bytes, heft, now,
  SWEEP_GRACE)
if not counted then
  return refused
end

local lease = now + lease_ms
local forget_at = lease + ttl
redis.call('HSET', KEY, 'record', record, 'version', 1, 'signals', 0, 'token', token,
  'lease', int(lease), 'forget_at', int(forget_at), 'weight', int(heft), 'ops', op)
keep_until(forget_at, heft, nil, counted)
index_lease(lease, forget_at, now)
return { 'created' }
