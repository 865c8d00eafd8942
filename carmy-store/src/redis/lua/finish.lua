
-- finish: ARGV = token, the outcome, the note to keep instead if it does not fit, retention
-- (ms), bytes per principal, bytes in total, and 'again' if this finish was sent before.
--
-- Replies {'finished'}, or {'lost'} when the token no longer holds the key.
local token, outcome, note = ARGV[1], ARGV[2], ARGV[3]
local ttl, share_bytes, total_bytes = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local again = ARGV[7] == 'again'
local now = now_ms()

local found = held_by(token, now)
if not found then
  if again and settled_by(request(now), token) then
    -- This very finish, sent again after its answer was lost.
    return { 'finished' }
  end
  return { 'lost' }
end

local function fits()
  return weight(WEIGHTS) + #outcome <= share_bytes
    and weight(TOTAL_WEIGHTS) + #outcome <= total_bytes
end
if not fits() then
  trim(SHARE, WEIGHTS, now, true)
  trim(TOTAL, TOTAL_WEIGHTS, now, true)
  if not fits() then
    -- The call ran: its retries must not run it again, even if its outcome cannot be kept.
    outcome = note
  end
end

local heft = found.weight + #outcome
local forget_at = now + ttl
settle('finished', token, { 'outcome', outcome, 'forget_at', int(forget_at), 'weight', int(heft) })
keep_until(forget_at, heft)
return { 'finished' }
