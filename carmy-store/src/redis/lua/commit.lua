-- commit: one transaction of a transactional tool's run, as `RecordStore::commit` and
-- `RecordStore::commit_unclaimed` say.
--
-- ARGV = 'outcome' if it finishes a lease, 'unclaimed' if it records a request never claimed
-- (or '' for neither), 'again' if it was sent before, the numbers of reads, listings and
-- writes; then each read (its collection's number, its key, the version seen), each listing
-- (its collection's number, the version seen) and each write (its collection's number, its
-- key, its value as JSON text, or '' to delete it: JSON text is never empty); then, to finish
-- a lease or record a request, finish's arguments: token, outcome, note, retention (ms), bytes
-- per principal, bytes in total; and to record a request, claim's too: fingerprint, the key's
-- weight, entries per principal, entries in total.
--
-- KEYS = to finish a lease or record a request, the five keys of the request (as for finish);
-- then the stamp counter; then each collection's records hash and version key, collection 1
-- first.
--
-- Replies {'done'}; {'conflict'} when a record or a collection read has changed since, and
-- nothing was applied; {'lost'} when the token no longer holds the key; {'taken'} when the
-- request to record is known already (in any state); or {'full', 'share' | 'total', entries,
-- bytes} when there is no room to record it. Nothing is applied but with {'done'}.
local mode, again = ARGV[1], ARGV[2] == 'again'
local finishing, recording = mode == 'outcome', mode == 'unclaimed'
local reads, listings, writes = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local first = 1
if finishing or recording then
  first = 6
else
  -- No request to touch: any use of these keys fails instead of touching another key.
  KEY, SHARE, WEIGHTS, TOTAL, TOTAL_WEIGHTS = nil, nil, nil, nil, nil
end
local STAMP = KEYS[first]
local function records_of(n)
  return KEYS[first + 2 * n - 1]
end
local function version_key_of(n)
  return KEYS[first + 2 * n]
end

-- A record's version as its field holds it: the digits before the colon; '0' when there is
-- no such record, nil when the field is not one the store wrote. Versions are compared as
-- the decimal text both sides write, exact at any size.
local function version_of(field)
  if not field then
    return '0'
  end
  return string.match(field, '^(%d+):')
end

local now = now_ms()
local found, token, outcome, note, ttl, share_bytes, total_bytes
local fingerprint, heft, share_entries, total_entries
if finishing or recording then
  local at = 6 + 3 * reads + 2 * listings + 3 * writes
  token, outcome, note = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  ttl, share_bytes, total_bytes = tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4]),
    tonumber(ARGV[at + 5])
  if recording then
    fingerprint, heft = ARGV[at + 6], tonumber(ARGV[at + 7])
    share_entries, total_entries = tonumber(ARGV[at + 8]), tonumber(ARGV[at + 9])
  end
end
if finishing then
  -- The lease first: a commit whose lease is lost is refused as such, whatever it read.
  found = held_by(token, now)
  if not found then
    if again and settled_by(request(now), token) then
      -- This very commit, sent again after its answer was lost: only it settles the key with
      -- this token, so its writes were applied with it.
      return { 'done' }
    end
    return { 'lost' }
  end
elseif recording then
  local kept = request(now)
  if kept then
    if again and settled_by(kept, token) then
      -- This very commit, sent again after its answer was lost: it recorded the request.
      return { 'done' }
    end
    -- Held, finished or uncertain: the claim that follows says which.
    return { 'taken' }
  end
end

-- Every check comes before the first write: Redis does not undo a script that fails
-- half-way, so a field the store cannot read fails the commit before anything is written.
local arg = 6
for _ = 1, reads do
  local n, key, seen = tonumber(ARGV[arg]), ARGV[arg + 1], ARGV[arg + 2]
  arg = arg + 3
  local version = version_of(redis.call('HGET', records_of(n), key))
  if not version then
    return redis.error_reply('a kept record has no version: ' .. records_of(n) .. ' ' .. key)
  end
  if version ~= seen then
    return { 'conflict' }
  end
end
for _ = 1, listings do
  local n, seen = tonumber(ARGV[arg]), ARGV[arg + 1]
  arg = arg + 2
  if (redis.call('GET', version_key_of(n)) or '0') ~= seen then
    return { 'conflict' }
  end
end

if recording then
  -- Room for the request, in the principal's share and in the totals, as a claim checks.
  local counted, refused = room(share_entries, share_bytes, total_entries, total_bytes, heft,
    now)
  if not counted then
    return refused
  end
end

if writes > 0 then
  local stamp = int(redis.call('INCR', STAMP))
  local written = {}
  for _ = 1, writes do
    local n, key, value = tonumber(ARGV[arg]), ARGV[arg + 1], ARGV[arg + 2]
    arg = arg + 3
    if value == '' then
      redis.call('HDEL', records_of(n), key)
    else
      redis.call('HSET', records_of(n), key, stamp .. ':' .. value)
    end
    written[n] = true
  end
  for n in pairs(written) do
    redis.call('SET', version_key_of(n), stamp)
  end
end
if finishing then
  finish_held(found, token, outcome, note, ttl, share_bytes, total_bytes, now)
elseif recording then
  -- Claimed and finished at once: nobody sees it held, and it is counted once, with its
  -- outcome.
  redis.call('HSET', KEY, 'state', 'held', 'fingerprint', fingerprint, 'weight', int(heft))
  finish_held({ weight = heft }, token, outcome, note, ttl, share_bytes, total_bytes, now)
end
return { 'done' }
