#!lua flags=no-writes
-- list: every record of one collection, with the collection's version, of one moment.
-- `no-writes`: it runs on a replica, and on a server out of memory.
--
-- KEYS = the collection's records hash and version key; ARGV = the most records to list.
--
-- Replies {'listed', version, key, field, key, field, ...}, the fields as kept (version,
-- colon, JSON text) in no particular order; or {'full', count} when there are more than the
-- most.
local count = redis.call('HLEN', KEYS[1])
if count > tonumber(ARGV[1]) then
  return { 'full', tostring(count) }
end
local reply = { 'listed', redis.call('GET', KEYS[2]) or '0' }
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do
  reply[#reply + 1] = item
end
return reply
