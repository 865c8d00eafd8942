
-- release: ARGV = token, the status to keep the key as uncertain with ('' to forget the
-- claim), retention (ms), and 'again' if this release was sent before.
--
-- Replies {'released'}, or {'lost'} when the token no longer holds the key.
local token, status, ttl, again = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == 'again'
local now = now_ms()

local found = held_by(token, now)
if not found then
  if again and settled_by(request(now), token) then
    -- This very release, sent again after its answer was lost.
    return { 'released' }
  end
  return { 'lost' }
end
if status == '' then
  forget()
  return { 'released' }
end
local forget_at = now + ttl
settle('uncertain', token, { 'status', status, 'forget_at', int(forget_at) })
keep_until(forget_at, found.weight, found.forget_at, tallies())
return { 'released' }
