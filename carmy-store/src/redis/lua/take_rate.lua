#!lua
-- Takes one call from a rate-limit bucket (see `rate_limits`): GCRA, as carmy_core's buckets.
-- Atomic like every script: of concurrent takes from one bucket, from any number of replicas,
-- no more are admitted than it holds.
--
-- Key: the bucket (a string: its theoretical arrival time, when it is full again, in
-- microseconds since the epoch by the server's clock). Arguments: one call's emission interval
-- and the tolerance (interval × (burst − 1)), in microseconds. Time is the server's (`TIME`),
-- so replicas agree whatever their own clocks say. The key expires when its bucket is full
-- again: a full bucket is the same as none.
local BUCKET = KEYS[1]
local step, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

local tat = tonumber(redis.call('GET', BUCKET)) or now
if tat < now then
  tat = now
end
local earliest = tat - tolerance
if earliest > now then
  return {'wait', string.format('%.0f', earliest - now)}
end
local full_at = tat + step
redis.call('SET', BUCKET, string.format('%.0f', full_at))
redis.call('PEXPIRE', BUCKET, math.max(1, math.ceil((full_at - now) / 1000)))
return {'taken'}
