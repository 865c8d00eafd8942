-- What the scripts of claims share besides `common.lua`, which the build puts before it: a
-- request's fields, its holder, and how a lease is settled and finished.

-- The request's fields, or nil when there is none to keep: its hash is gone, or its time is
-- up (Redis keeps a key through the last millisecond of its TTL; the store does not).
local function request(now)
  local f = redis.call('HMGET', KEY, 'state', 'fingerprint', 'token', 'lease', 'if_lost',
    'forget_at', 'status', 'weight', 'settled_by')
  if not f[1] then
    return nil
  end
  local found = {
    state = f[1], fingerprint = f[2], token = f[3], lease = tonumber(f[4]) or 0,
    if_lost = f[5] or '', forget_at = tonumber(f[6]) or 0, status = f[7] or '',
    weight = tonumber(f[8]) or 0, settled_by = f[9],
  }
  if found.forget_at <= now then
    forget()
    return nil
  end
  return found
end

-- The request as held by `token`, or nil: it is no longer that claim's to settle. A lease
-- past its end that nobody settled yet is still its holder's, as in the other stores: the
-- holder came back in time to say how the call ended.
local function held_by(token, now)
  local found = request(now)
  if found and found.state == 'held' and found.token == token then
    return found
  end
  return nil
end

-- Settles the request as `state` (with `fields`), by its holder `token`: the lease is over,
-- and a call sent again after its answer was lost can tell that it was its own.
local function settle(state, token, fields)
  redis.call('HSET', KEY, 'state', state, 'settled_by', token, unpack(fields))
  redis.call('HDEL', KEY, 'token', 'lease', 'if_lost')
end

-- Whether `token` settled the request itself (a lease that ran out settles it by nobody):
-- asked of a settle sent again, after its first answer was lost.
local function settled_by(found, token)
  return found ~= nil and found.settled_by == token
end

-- Finishes the request `found`, held by `token`, with `outcome` kept for the retention (`ttl`
-- ms); or with `note` if the outcome does not fit in its principal's bytes (`share_bytes`) or
-- the totals' (`total_bytes`), even after a whole trim. What finish and commit both do.
local function finish_held(found, token, outcome, note, ttl, share_bytes, total_bytes, now)
  local counted = tallies()
  local function fits()
    return counted.mine.sum + #outcome <= share_bytes
      and counted.total.sum + #outcome <= total_bytes
  end
  if not fits() then
    trim(SHARE, WEIGHTS, now, true)
    trim(TOTAL, TOTAL_WEIGHTS, now, true)
    counted = tallies()
    if not fits() then
      -- The call ran: its retries must not run it again, even if its outcome cannot be kept.
      outcome = note
    end
  end
  local heft = found.weight + #outcome
  local forget_at = now + ttl
  settle('finished', token, { 'outcome', outcome, 'forget_at', int(forget_at), 'weight', int(heft) })
  keep_until(forget_at, heft, found.forget_at, counted)
end
