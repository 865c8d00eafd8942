-- task_sweep: counts out of the totals the tasks whose time is up (Redis removed their hashes
-- by itself, or will in its last millisecond), and names the running tasks whose lease ran
-- out, for the caller to settle (the record's rules are the caller's). The tasks counted out
-- are those it forgot; those counted out by a create before it (which trims a batch), or
-- expired more than an hour before their totals did, are not counted again.
--
-- Its keys are not a task's: KEYS = the totals' share and weights, the index of running
-- leases; `common.lua`'s functions are given them by name. ARGV = the most tasks to name.
--
-- Replies {how many were counted out, key, key, ...}.
local totals, total_weights, leases = KEYS[1], KEYS[2], KEYS[3]
local now = now_ms()
local forgotten = trim(totals, total_weights, now, true)
local reply = { int(forgotten) }
for _, key in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', int(now), 'LIMIT', 0,
    tonumber(ARGV[1]))) do
  reply[#reply + 1] = key
end
return reply
