-- coord.lua - capacity leases for one sink shared by several brokers, run
-- atomically on the Redis server with the server's clock (TIME).
--
-- KEYS[1]  the sink's hash, "sluice:{SINK}"; its fields:
--   epoch        server time (ms) when the hash was (re)created
--   learn_until  until then (one TTL after a new epoch) brokers are granted
--                only what they say they already hold
--   limit        the sink's limit, thousandths of a unit per second
--   b:ID         one broker: "held want expiry_ms reserved_milli"
-- A broker is live while expiry_ms > now; a dead broker's slices are free
-- from its expiry; its reserved rate still counts for KEEP_TTLS TTLs (it may
-- be running on it without Redis), then its field is removed.
--
-- ARGV[1] is the operation:
--   renew ID RESERVED WANT HELD TTL_MS SLICES LIMIT_IF_UNSET
--     -> {epoch, granted, slice_milli, learning, limit, sum_reserved, live, now}
--   release ID                        -> 1 (its slices are free at once)
--   limit ID RESERVED LIMIT           -> {1, sum_reserved} or {0, sum_reserved}
--                                        (refused: LIMIT below the sum)
--   split TOTAL D1 D2 ...             -> fair shares (the pure split, for tests)
--   grant TOTAL FAIR CLAIMED OTHERS_HELD LEARNING -> one grant (for tests)
-- Keep split and grant equal to broker/coord/share.c (tests/unit/test_share.c).
local key = KEYS[1]
local op = ARGV[1]
local KEEP_TTLS = 100

local function split(total, demand)
  local n = #demand
  local fair, done = {}, {}
  for i = 1, n do fair[i] = 0; done[i] = false end
  local left, open = total, n
  while open > 0 do
    local each = math.floor(left / open)
    local met = 0
    for i = 1, n do
      if not done[i] and demand[i] <= each then
        fair[i] = demand[i]; left = left - demand[i]; done[i] = true; met = met + 1
      end
    end
    if met == 0 then break end
    open = open - met
  end
  if open > 0 then
    local each, extra = math.floor(left / open), left % open
    for i = 1, n do
      if not done[i] then
        fair[i] = each
        if extra > 0 then fair[i] = each + 1; extra = extra - 1 end
      end
    end
  end
  return fair
end

local function grant(total, fair, claimed, others_held, learning)
  local want = fair
  if learning then want = claimed end
  local room = math.max(total - others_held, 0)
  return math.min(want, room)
end

if op == 'split' then
  local demand = {}
  for i = 3, #ARGV do demand[#demand + 1] = tonumber(ARGV[i]) end
  return split(tonumber(ARGV[2]), demand)
end
if op == 'grant' then
  return grant(tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = 'b:' .. ARGV[2]

if op == 'release' then
  local rec = redis.call('HGET', key, id)
  if rec then
    local held, want, expiry, reserved = string.match(rec, '(%d+) (%d+) (%d+) (%d+)')
    redis.call('HSET', key, id, '0 0 ' .. now .. ' ' .. reserved)
  end
  return 1
end

-- every broker's record: live ones (name order) and the reserved rates kept
local function brokers(ttl)
  local all = redis.call('HGETALL', key)
  local live, sum_reserved = {}, 0
  for i = 1, #all, 2 do
    local f = all[i]
    if string.sub(f, 1, 2) == 'b:' then
      local held, want, expiry, reserved = string.match(all[i + 1], '(%d+) (%d+) (%d+) (%d+)')
      expiry = tonumber(expiry)
      if expiry + KEEP_TTLS * ttl < now then
        redis.call('HDEL', key, f)
      else
        if f ~= id then sum_reserved = sum_reserved + tonumber(reserved) end
        if expiry > now and f ~= id then
          live[#live + 1] = {name = f, held = tonumber(held), want = tonumber(want)}
        end
      end
    end
  end
  return live, sum_reserved
end

if op == 'limit' then
  local reserved, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
  local _, sum_reserved = brokers(tonumber(redis.call('HGET', key, 'ttl') or 3000))
  sum_reserved = sum_reserved + reserved
  if limit < sum_reserved then return {0, sum_reserved} end
  redis.call('HSET', key, 'limit', limit)
  return {1, sum_reserved}
end

if op ~= 'renew' then return redis.error_reply('coord.lua: unknown operation ' .. tostring(op)) end

local reserved, want, held = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, total, limit_if_unset = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local epoch = redis.call('HGET', key, 'epoch')
if not epoch then
  -- a new epoch: Redis lost the keys (or this is the first broker); leases
  -- granted before may still be alive for one TTL
  epoch = now
  redis.call('HSET', key, 'epoch', now, 'learn_until', now + ttl, 'ttl', ttl)
end
local learning = now < tonumber(redis.call('HGET', key, 'learn_until') or 0)
local limit = tonumber(redis.call('HGET', key, 'limit') or 0)
if limit == 0 and limit_if_unset > 0 then
  limit = limit_if_unset
  redis.call('HSET', key, 'limit', limit)
end

local live, sum_reserved = brokers(ttl)
sum_reserved = sum_reserved + reserved
live[#live + 1] = {name = id, held = 0, want = want, me = true}
table.sort(live, function(a, b) return a.name < b.name end)
local demand, others_held, mine = {}, 0, 1
for i, b in ipairs(live) do
  demand[i] = b.want
  if b.me then mine = i else others_held = others_held + b.held end
end
local fair = split(total, demand)
local g = grant(total, fair[mine], held, others_held, learning)
redis.call('HSET', key, id, g .. ' ' .. want .. ' ' .. (now + ttl) .. ' ' .. reserved)
local shared = math.max(limit - sum_reserved, 0)
local slice_milli = math.floor(shared / total)
local l = 0
if learning then l = 1 end
return {tonumber(epoch), g, slice_milli, l, limit, sum_reserved, #live, now}
