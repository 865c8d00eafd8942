#!lua
-- What the store's scripts that write share; the build puts it before each of them (and
-- `request.lua` after it, for the scripts of claims). The `#!lua` line makes Redis (7.0 or
-- later) check the script before it runs: out of memory, or on a read-only replica, it is
-- refused whole instead of failing half-way through its writes.
--
-- Claim, finish and release get the same five keys, all declared, so nothing touches an
-- undeclared key: the request's hash, its principal's share and the share's weights (one hash
-- slot, through the principal's hash tag), then the totals' share and weights (a slot of their
-- own). A commit that finishes a lease gets them first too, then the records' keys; one that
-- does not gets only the records' keys, and sets these five to nil. The scripts of tasks get
-- the same five for a task: its hash, its principal's share of tasks, the totals of tasks.
local KEY, SHARE, WEIGHTS, TOTAL, TOTAL_WEIGHTS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

-- The field of a weights hash that holds their sum. Members are request or task keys, whose
-- names hold a `{p:` hash tag, so none is named `sum`.
local SUM = 'sum'

-- Members counted out at once by a routine trim: steady traffic never leaves more than that
-- behind, and no script runs long. A share at its bound is trimmed whole before it refuses.
local BATCH = 256

-- Redis's clock, in milliseconds since the epoch: the one clock every replica that shares
-- this server agrees on, whatever the clocks of their own machines say.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- A number as an integer argument: Lua could write a large one in exponent form, which
-- Redis would not read as an integer.
local function int(n)
  return string.format('%.0f', n)
end

-- A share is a sorted set of keys (requests, or tasks) scored by the instant each is
-- forgotten, which is also when its hash's Redis TTL ends; its weights hash holds each
-- member's weight and their sum. What a share holds at `now` is what scores after `now`: keys
-- Redis expired on its own are counted out at that very instant, without anybody having
-- looked at them.
local function entries(share, now)
  return redis.call('ZCOUNT', share, '(' .. int(now), '+inf')
end

-- Removes the members of `share` whose time is up, with their weights: one batch, or all of
-- them when `all`. How many it removed.
local function trim(share, weights, now, all)
  local removed = 0
  repeat
    local due = redis.call('ZRANGEBYSCORE', share, '-inf', int(now), 'LIMIT', 0, BATCH)
    if #due == 0 then
      return removed
    end
    removed = removed + #due
    local gone = 0
    for _, kept in ipairs(redis.call('HMGET', weights, unpack(due))) do
      gone = gone + (tonumber(kept) or 0)
    end
    -- The lowest ranks are the members just read: the set is ordered by score.
    redis.call('ZREMRANGEBYRANK', share, 0, #due - 1)
    redis.call('HDEL', weights, unpack(due))
    if redis.call('EXISTS', share) == 0 then
      redis.call('DEL', weights)
    elseif redis.call('EXISTS', weights) == 1 then
      redis.call('HINCRBY', weights, SUM, int(-gone))
    end
  until not all or #due < BATCH
  return removed
end

-- A share as a script reads it before it writes there, in one read: its keys, the weights'
-- sum, what `member` weighs in it, and whether the weights are new; `grace` is how long both
-- keys outlive the share's last member. The sum includes members whose time is up but that no
-- trim removed yet: never less than the truth, so a bound checked on it fails closed, and
-- `trim(..., true)` followed by a new tally makes it exact. Read it after any trim of the
-- share, which changes the sum.
local function tally(share, weights, member, grace)
  local f = redis.call('HMGET', weights, member, SUM)
  return {
    share = share, weights = weights, member = member, grace = grace or 0,
    heft = tonumber(f[1]) or 0, sum = tonumber(f[2]) or 0, new = f[2] == nil,
  }
end

-- The tallies of the key in its principal's share (`mine`) and in the totals (`total`), which
-- outlive their last member by `total_grace`.
local function tallies(total_grace)
  return {
    mine = tally(SHARE, WEIGHTS, KEY),
    total = tally(TOTAL, TOTAL_WEIGHTS, KEY, total_grace),
  }
end

-- Counts the tallied member in its share until `score`, weighing `heft` (replacing what it
-- weighed); `was` is its score before, nil if it is new. Both keys last as long as the share's
-- last member, plus the grace: nothing is kept forever, nothing ends early. Their TTLs move
-- when the member outlives them, or when it was the last and moves earlier; otherwise they
-- are left alone.
local function count_in(t, score, heft, was)
  redis.call('ZADD', t.share, int(score), t.member)
  redis.call('HSET', t.weights, t.member, int(heft), SUM, int(t.sum - t.heft + heft))
  local ends = redis.call('PEXPIRETIME', t.share)
  local last
  if t.new or ends < 0 or (was ~= nil and was + t.grace >= ends and score < was) then
    -- New keys, or the last member moved earlier: the set says which member is last now.
    last = tonumber(redis.call('ZRANGE', t.share, -1, -1, 'WITHSCORES')[2])
  elseif score + t.grace > ends then
    last = score
  else
    return
  end
  redis.call('PEXPIREAT', t.share, int(last + t.grace))
  redis.call('PEXPIREAT', t.weights, int(last + t.grace))
end

-- Whether `share` is full for one more key weighing `heft` (`max_entries`, `max_bytes`), and
-- its tally of the key. Nobody's kept key is forgotten to make room, so a full share refuses,
-- after a whole trim: what is refused is what is really kept.
local function full(share, weights, max_entries, max_bytes, heft, now, grace)
  trim(share, weights, now, false)
  local t = tally(share, weights, KEY, grace)
  local function over()
    return entries(share, now) >= max_entries or t.sum + heft > max_bytes
  end
  if not over() then
    return false, t
  end
  trim(share, weights, now, true)
  t = tally(share, weights, KEY, grace)
  return over(), t
end

-- Whether one more key weighing `heft` fits in its principal's share (`share_entries`,
-- `share_bytes`) and in the totals (`total_entries`, `total_bytes`; they outlive their last
-- member by `total_grace`): the key's tallies in both, or nil and the reply that refuses it.
local function room(share_entries, share_bytes, total_entries, total_bytes, heft, now,
                    total_grace)
  local mine_full, mine = full(SHARE, WEIGHTS, share_entries, share_bytes, heft, now)
  if mine_full then
    return nil, { 'full', 'share', int(entries(SHARE, now)), int(mine.sum) }
  end
  local total_full, total = full(TOTAL, TOTAL_WEIGHTS, total_entries, total_bytes, heft, now,
    total_grace)
  if total_full then
    return nil, { 'full', 'total', int(entries(TOTAL, now)), int(total.sum) }
  end
  return { mine = mine, total = total }
end

-- Counts `member` out of `share`, if it is still counted.
local function count_out(share, weights, member)
  if redis.call('ZREM', share, member) == 0 then
    return
  end
  local heft = tonumber(redis.call('HGET', weights, member)) or 0
  redis.call('HDEL', weights, member)
  if redis.call('EXISTS', share) == 0 then
    redis.call('DEL', weights)
  elseif redis.call('EXISTS', weights) == 1 then
    redis.call('HINCRBY', weights, SUM, int(-heft))
  end
end

-- Keeps the key (a request, or a task) until `forget_at`, weighing `heft`: its hash's TTL
-- and its score in both shares, whose tallies are `counted`; `was` is its score before, nil if
-- it is new.
local function keep_until(forget_at, heft, was, counted)
  redis.call('PEXPIREAT', KEY, int(forget_at))
  count_in(counted.mine, forget_at, heft, was)
  count_in(counted.total, forget_at, heft, was)
end

-- Forgets the key: its hash and its place in both shares.
local function forget()
  redis.call('DEL', KEY)
  count_out(SHARE, WEIGHTS, KEY)
  count_out(TOTAL, TOTAL_WEIGHTS, KEY)
end
