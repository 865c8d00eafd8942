
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

finish_held(found, token, outcome, note, ttl, share_bytes, total_bytes, now)
return { 'finished' }
