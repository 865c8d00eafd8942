-- What the scripts of tasks share besides `common.lua`, which the build puts before it.
--
-- A task's hash holds `record` (its record as stored JSON: the rules that change it are the
-- caller's, in Rust), `version` (counted up by every write: what a write compares and sets),
-- `signals` (counted up by the writes its holder must act on: a cancel request, answers, its
-- lease settled by another), `token` and `lease` (its holder, and when the lease ends by
-- Redis's clock, while it runs), `forget_at` (when it is forgotten: its TTL, and its score in
-- both shares), `weight` (what it counts for in them) and `ops` (the ids of its last writes,
-- so that a write sent again after its answer was lost finds that it was applied).
--
-- Every task script but the sweep gets six keys: the five of `common.lua` for the task, then
-- the index of running leases, a sorted set of task keys scored by when each lease ends.
local LEASES = KEYS[6]

-- How many of its last writes a task remembers. A write is sent again at once when its
-- connection died under it, so only the writes of other callers in that instant can come in
-- between.
local REMEMBERED = 8

-- Whether `ops` (ids separated by spaces) holds `op`.
local function has_op(ops, op)
  return ops ~= nil and string.find(' ' .. ops .. ' ', ' ' .. op .. ' ', 1, true) ~= nil
end

-- `ops` with `op` first, the oldest beyond REMEMBERED forgotten.
local function remember(ops, op)
  local kept = { op }
  for id in string.gmatch(ops or '', '%S+') do
    if #kept >= REMEMBERED then
      break
    end
    kept[#kept + 1] = id
  end
  return table.concat(kept, ' ')
end

-- How long the totals of tasks outlive their last member (ms): a task that Redis forgot by
-- itself is still in them, for the next sweep to count it out and say how many it forgot.
-- What they hold past a member's time counts for nothing (see `entries`).
local SWEEP_GRACE = 60 * 60 * 1000

-- The task's tallies, the totals' with their grace.
local function task_tallies()
  return tallies(SWEEP_GRACE)
end

-- Indexes the running task under its lease's end, for a sweep to find once the lease runs
-- out. The index lasts as long as the longest kept of the tasks it held (`forget_at`).
local function index_lease(lease, forget_at, now)
  redis.call('ZADD', LEASES, int(lease), KEY)
  local left = redis.call('PTTL', LEASES)
  if left < 0 or left < forget_at - now then
    redis.call('PEXPIREAT', LEASES, int(forget_at))
  end
end

-- Whether `grow` more bytes fit in the task's principal's share (`share_bytes`) and in the
-- totals (`total_bytes`), trimming both whole before saying no: what is refused is what is
-- really kept. `counted` (the task's tallies) is read again after a trim.
local function room_for(counted, grow, share_bytes, total_bytes, now)
  local function fits()
    return grow <= 0 or (counted.mine.sum + grow <= share_bytes
      and counted.total.sum + grow <= total_bytes)
  end
  if fits() then
    return true
  end
  trim(SHARE, WEIGHTS, now, true)
  trim(TOTAL, TOTAL_WEIGHTS, now, true)
  local again = task_tallies()
  counted.mine, counted.total = again.mine, again.total
  return fits()
end
