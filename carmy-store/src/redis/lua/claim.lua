
-- claim: ARGV = fingerprint, token, lease (ms), if_lost (a status, or '' to forget the
-- claim), retention (ms), the key's weight, then the bounds: entries and bytes per
-- principal, entries and bytes in total.
--
-- Replies {'acquired'}, {'running', token, ms left on its lease}, {'finished', outcome},
-- {'uncertain', status}, {'conflict'}, or {'full', 'share' | 'total', entries, bytes}.
local fingerprint, token, lease_ms, if_lost = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local ttl, heft = tonumber(ARGV[5]), tonumber(ARGV[6])
local share_entries, share_bytes = tonumber(ARGV[7]), tonumber(ARGV[8])
local total_entries, total_bytes = tonumber(ARGV[9]), tonumber(ARGV[10])
local now = now_ms()

local found = request(now)
if found and found.state == 'held' and found.lease <= now then
  -- The holder never came back: settle the key as its claim said.
  if found.if_lost == '' then
    forget()
    found = nil
  else
    -- Its hash is kept until the lease's end plus the retention already (TTL and score),
    -- which is just how long a lost write stays uncertain.
    redis.call('HSET', KEY, 'state', 'uncertain', 'status', found.if_lost)
    redis.call('HDEL', KEY, 'token', 'lease', 'if_lost')
    found.state, found.status = 'uncertain', found.if_lost
  end
end
if found then
  if found.state == 'held' and found.token == token then
    -- This very claim, sent again after its answer was lost.
    return { 'acquired' }
  end
  if found.fingerprint ~= fingerprint then
    return { 'conflict' }
  end
  if found.state == 'held' then
    return { 'running', found.token, int(found.lease - now) }
  elseif found.state == 'finished' then
    return { 'finished', redis.call('HGET', KEY, 'outcome') }
  elseif found.state == 'uncertain' then
    return { 'uncertain', found.status }
  end
  return redis.error_reply('a kept request is in no known state: ' .. tostring(found.state))
end

-- Room for one more, in the principal's share and in the totals.
local counted, refused = room(share_entries, share_bytes, total_entries, total_bytes, heft, now)
if not counted then
  return refused
end

local lease = now + lease_ms
-- A claim to forget if lost needs nothing once its lease ends; one to keep as uncertain
-- needs its retention after that.
local forget_at = lease
if if_lost ~= '' then
  forget_at = lease + ttl
end
redis.call('DEL', KEY)
redis.call('HSET', KEY, 'state', 'held', 'fingerprint', fingerprint, 'token', token,
  'lease', int(lease), 'if_lost', if_lost, 'forget_at', int(forget_at), 'weight', int(heft))
keep_until(forget_at, heft, nil, counted)
return { 'acquired' }
