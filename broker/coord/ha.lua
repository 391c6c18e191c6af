-- ha.lua - leadership of a high-availability group, run atomically on the
-- Redis server with the server's clock (TIME).
--
-- KEYS[1]  the group's hash, "sluice:ha:{GROUP}" (one key slot); its fields:
--   leader      the node that is primary
--   epoch       incremented at every promotion; never goes back
--   until       the leader's lease ends then (server ms)
--   sync        the standby named in sync ("" none): the only node that may
--               promote, and only once the lease has expired
--   ep:NODE     a node's client endpoint; repl:NODE its replication endpoint
--   seen:NODE   when it last ran tick (server ms); lag:NODE its lag in
--               records as the primary last reported it
--
-- ARGV[1] is the operation:
--   tick NODE TTL_MS KNOWN_EPOCH CLIENT_EP REPL_EP WANT_SYNC LAG
--     WANT_SYNC: "=" keeps the record's sync, "-" sets none, else a node.
--     A leader renews its lease (and sets sync as asked); the node named in
--     sync promotes once the lease has expired; a Redis whose epoch is below
--     KNOWN_EPOCH (it lost its data) promotes nobody.
--     -> {role, epoch, leader, leader_ep, leader_repl, sync, lease_left_ms,
--         then per node: name, client endpoint, ms since it last ran tick}
--        role: "primary", "standby" or "lost"
--   handover NODE TTL_MS    -> {1, epoch, new leader} when NODE was leader and a
--                              standby was in sync: that standby is leader at
--                              epoch + 1 (a switchover); else {0, epoch, ""}
--   release NODE            -> 1 when NODE was leader: its lease ends now
--   recover NODE EPOCH TTL  -> the epoch: NODE leader at max(EPOCH, epoch) + 1
--   status                  -> {epoch, leader, sync, lease_left_ms, n1, ep1, lag1, seen_ago1, ...}
local key = KEYS[1]
local op = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function get(f, d)
  local v = redis.call('HGET', key, f)
  if v == false then return d end
  return v
end

-- nodes appends every node's name, client endpoint and silence (ms) to out.
local function nodes(out)
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 3) == 'ep:' then
      local n = string.sub(all[i], 4)
      table.insert(out, n)
      table.insert(out, all[i + 1])
      table.insert(out, now - tonumber(get('seen:' .. n, '0')))
    end
  end
  return out
end

if op == 'tick' then
  local node, ttl, known = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
  local cep, rep, want, lag = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
  redis.call('HSET', key, 'ep:' .. node, cep, 'repl:' .. node, rep, 'seen:' .. node, now)
  local epoch = tonumber(get('epoch', '0'))
  if epoch < known then
    return {'lost', epoch, '', '', '', '', 0}
  end
  if epoch == 0 then
    redis.call('HSET', key, 'leader', node, 'epoch', 1, 'until', now + ttl, 'sync', '')
    return nodes({'primary', 1, node, cep, rep, '', ttl})
  end
  local leader = get('leader', '')
  local untl = tonumber(get('until', '0'))
  local sync = get('sync', '')
  if leader == node then
    redis.call('HSET', key, 'until', now + ttl)
    if want == '-' then sync = '' elseif want ~= '=' then sync = want end
    redis.call('HSET', key, 'sync', sync)
    if sync ~= '' and lag ~= '' then redis.call('HSET', key, 'lag:' .. sync, lag) end
    return nodes({'primary', epoch, node, cep, rep, sync, ttl})
  end
  if untl <= now and sync == node then
    epoch = epoch + 1
    redis.call('HSET', key, 'leader', node, 'epoch', epoch, 'until', now + ttl, 'sync', '')
    return nodes({'primary', epoch, node, cep, rep, '', ttl})
  end
  local left = untl - now
  if left < 0 then left = 0 end
  return nodes({'standby', epoch, leader, get('ep:' .. leader, ''), get('repl:' .. leader, ''), sync, left})
elseif op == 'handover' then
  local to = get('sync', '')
  local e = tonumber(get('epoch', '0'))
  if get('leader', '') == ARGV[2] and to ~= '' then
    e = e + 1
    redis.call('HSET', key, 'leader', to, 'epoch', e, 'until', now + tonumber(ARGV[3]), 'sync', '')
    return {1, e, to}
  end
  return {0, e, ''}
elseif op == 'release' then
  if get('leader', '') == ARGV[2] then
    redis.call('HSET', key, 'until', 0)
    return 1
  end
  return 0
elseif op == 'recover' then
  local e = tonumber(get('epoch', '0'))
  local k = tonumber(ARGV[3])
  if k > e then e = k end
  e = e + 1
  redis.call('HSET', key, 'leader', ARGV[2], 'epoch', e, 'until', now + tonumber(ARGV[4]), 'sync', '')
  return e
elseif op == 'status' then
  local out = {tonumber(get('epoch', '0')), get('leader', ''), get('sync', ''), 0}
  local left = tonumber(get('until', '0')) - now
  if left > 0 then out[4] = left end
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local f = all[i]
    if string.sub(f, 1, 3) == 'ep:' then
      local n = string.sub(f, 4)
      table.insert(out, n)
      table.insert(out, all[i + 1])
      table.insert(out, get('lag:' .. n, ''))
      table.insert(out, now - tonumber(get('seen:' .. n, '0')))
    end
  end
  return out
end
return redis.error_reply('unknown operation ' .. tostring(op))
