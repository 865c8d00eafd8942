#!lua
-- Redeems one single-use token (see `redemptions`). Atomic like every script: of concurrent
-- redemptions of one token, from any number of replicas, one adds its record.
--
-- Keys: the principal's redeemed tokens (a sorted set, each member the token's issue instant
-- and nonce as 32 hex digits, scored by its issue instant, so members sort as tokens do), its
-- floor (a string: the member of the newest record let go; tokens as old or older are
-- refused), and every principal holding records (a sorted set scored by when its newest record
-- expires). Each key's Redis TTL ends with what it holds, so an idle principal's keys go on
-- their own. Times are the caller's, in milliseconds since the epoch: TTLs are set relative
-- to its `now`, and records are trimmed by its clock too.
local REDEEMED, FLOOR, REDEEMERS = KEYS[1], KEYS[2], KEYS[3]
local token, score = ARGV[1], tonumber(ARGV[2])
local now, ttl, expires = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local per_principal, most_principals = tonumber(ARGV[6]), tonumber(ARGV[7])
-- The principal among the redeemers; empty for the anonymous one, which is never counted.
local principal = ARGV[8]

local function int(n)
  return string.format('%.0f', n)
end

-- Whether the token `a` was issued no later than `b` (members of 32 hex digits), compared
-- eight digits at a time as numbers: Lua compares strings by the server's locale.
local function no_later(a, b)
  for i = 1, 25, 8 do
    local x, y = tonumber(string.sub(a, i, i + 7), 16), tonumber(string.sub(b, i, i + 7), 16)
    if x ~= y then
      return x < y
    end
  end
  return true
end

-- Makes `key` live at least `left` ms more.
local function keep(key, left)
  if redis.call('PTTL', key) < left then
    redis.call('PEXPIRE', key, int(left))
  end
end

redis.call('ZREMRANGEBYSCORE', REDEEMERS, '-inf', int(now))
if principal ~= '' and not redis.call('ZSCORE', REDEEMERS, principal) then
  if redis.call('ZCARD', REDEEMERS) >= most_principals then
    return {'crowded'}
  end
end

-- Tokens issued at or before it are expired (none while `now` is under the ttl).
local cutoff = now - ttl
local floor = redis.call('GET', FLOOR)
if cutoff >= 0 then
  redis.call('ZREMRANGEBYSCORE', REDEEMED, '-inf', int(cutoff))
  if floor and tonumber(string.sub(floor, 1, 16), 16) <= cutoff then
    redis.call('DEL', FLOOR)
    floor = false
  end
end
if floor and no_later(token, floor) then
  return {'superseded'}
end
if redis.call('ZADD', REDEEMED, 'NX', int(score), token) == 0 then
  return {'used'}
end
if redis.call('ZCARD', REDEEMED) > per_principal then
  -- The oldest record is newer than the floor, so the floor only moves forward.
  local oldest = redis.call('ZPOPMIN', REDEEMED)
  local left = tonumber(oldest[2]) + ttl - now
  redis.call('SET', FLOOR, oldest[1], 'PX', int(math.max(1, left)))
end
local left = math.max(1, expires - now)
keep(REDEEMED, left)
if principal ~= '' then
  redis.call('ZADD', REDEEMERS, 'GT', int(expires), principal)
  keep(REDEEMERS, left)
end
return {'redeemed'}
