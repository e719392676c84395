"""The Lua scripts of :class:`~.redis.RedisTaskStore`: each write to Redis is one of them.

A script runs atomically on the redis-server, so a task's hash and its index entries (the expiry
and lease sorted sets, the list order, the owner's set of unfinished tasks) always change
together; the key layout is described in :mod:`.redis`. Each script says which ``KEYS`` and
``ARGV`` it takes; :data:`SCRIPTS` is what the store registers when it opens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["COUNT_ACTIVE", "CREATE", "DELETE", "FORGET", "KEY_TTL_MARGIN_MS", "SAVE", "SCRIPTS"]

KEY_TTL_MARGIN_MS: Final = 60_000
"""How long Redis keeps a task's key past its deadline: the replicas' sweeper deletes it first."""

# A Lua function both scripts that count the owner's unfinished tasks define: the members of the
# active set whose hash is still there, up to a limit; a member whose hash Redis expired is
# dropped (its key is built in the script: one redis-server, as every script of this store
# assumes).
_COUNT_LIVE: Final = """
local function count_live(set, task_prefix, limit)
  local count = 0
  for _, id in ipairs(redis.call('SMEMBERS', set)) do
    if redis.call('EXISTS', task_prefix .. id) == 1 then
      count = count + 1
      if count >= limit then return count end
    else
      redis.call('SREM', set, id)
    end
  end
  return count
end
"""

# A Lua function CREATE and SAVE define: the task's key expires KEY_TTL_MARGIN after its deadline
# (ms since the epoch), judged on the redis-server's own clock (TIME), as every deadline is; a
# deadline already past keeps the key for the margin, for the sweeper to delete it first.
_EXPIRE_KEY: Final = f"""
local function expire_key(key, deadline_ms)
  local now = redis.call('TIME')
  local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('PEXPIRE', key, math.max(tonumber(deadline_ms) - now_ms, 0) + {KEY_TTL_MARGIN_MS})
end
"""

# KEYS: task, expiry, leases, every owner's order, this owner's order, this owner's active set.
# ARGV: data, version, order member, expiry score, lease score, key expiry (the deadline in ms
# since the epoch on the redis-server's clock, "": none; see _EXPIRE_KEY), task id, terminal
# ("1"/"0"), then the owner's limit of unfinished tasks ("": none), the task key prefix and the
# claim (the run's fencing token), then the workers' queue stream when the task is queued ("":
# not queued; the entry is added in this same step, see .queue).
# Replies {1}: created; {0, data}: the id exists; {2, active}: the owner is at its limit
# (counted only when the set's size reaches it: a set smaller than the limit is under it).
CREATE: Final = (
    _COUNT_LIVE
    + _EXPIRE_KEY
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('HGET', KEYS[1], 'data')}
end
if ARGV[9] and ARGV[9] ~= '' then
  local limit = tonumber(ARGV[9])
  if redis.call('SCARD', KEYS[6]) >= limit then
    local active = count_live(KEYS[6], ARGV[10], limit)
    if active >= limit then return {2, active} end
  end
end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'version', ARGV[2], 'order', ARGV[3], 'owner', KEYS[5],
  'active', KEYS[6], 'claim', ARGV[11])
if ARGV[8] == '0' then redis.call('SADD', KEYS[6], ARGV[7]) end
if ARGV[6] ~= '' then expire_key(KEYS[1], ARGV[6]) end
if ARGV[12] and ARGV[12] ~= '' then
  redis.call('HSET', KEYS[1], 'queued', '1')
  redis.call('XADD', ARGV[12], '*', 'task', ARGV[7], 'claim', ARGV[11])
end
redis.call('ZADD', KEYS[4], 0, ARGV[3])
redis.call('ZADD', KEYS[5], 0, ARGV[3])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[7]) end
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[3], ARGV[5], ARGV[7]) end
return {1}
"""
)

# KEYS: as CREATE. ARGV: expected version, then as CREATE (data, new version, ...), then the
# pub/sub channel and the event to publish there once saved ("": none), the fence (the claim a
# run's write was started under, "": not a run's write), the claim written, and the workers' queue
# stream when the saved task is queued ("": not queued; an entry is added when it was not queued
# before, in this same step). A write whose version or fence is not the stored one replies
# {0, data}: nothing written, nothing published, nothing queued.
SAVE: Final = (
    _EXPIRE_KEY
    + """
local held = redis.call('HMGET', KEYS[1], 'version', 'order', 'owner', 'active', 'claim', 'queued')
if not held[1] then return {0} end
if held[1] ~= ARGV[1] or (ARGV[12] ~= '' and (held[5] or '0') ~= ARGV[12]) then
  return {0, redis.call('HGET', KEYS[1], 'data')}
end
if held[2] ~= ARGV[4] or held[3] ~= KEYS[5] then
  if held[2] then
    redis.call('ZREM', KEYS[4], held[2])
    if held[3] then redis.call('ZREM', held[3], held[2]) end
  end
  redis.call('ZADD', KEYS[4], 0, ARGV[4])
  redis.call('ZADD', KEYS[5], 0, ARGV[4])
end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'version', ARGV[3], 'order', ARGV[4], 'owner', KEYS[5],
  'active', KEYS[6], 'claim', ARGV[13])
if ARGV[7] ~= '' then expire_key(KEYS[1], ARGV[7]) else redis.call('PERSIST', KEYS[1]) end
if held[4] and held[4] ~= KEYS[6] then redis.call('SREM', held[4], ARGV[8]) end
if ARGV[9] == '1' then redis.call('SREM', KEYS[6], ARGV[8]) else redis.call('SADD', KEYS[6], ARGV[8]) end
for i = 2, 3 do
  if ARGV[i + 3] ~= '' then
    redis.call('ZADD', KEYS[i], ARGV[i + 3], ARGV[8])
  else
    redis.call('ZREM', KEYS[i], ARGV[8])
  end
end
if ARGV[14] and ARGV[14] ~= '' then
  if held[6] ~= '1' then
    redis.call('HSET', KEYS[1], 'queued', '1')
    redis.call('XADD', ARGV[14], '*', 'task', ARGV[8], 'claim', ARGV[13])
  end
elseif held[6] then
  redis.call('HDEL', KEYS[1], 'queued')
end
if ARGV[11] and ARGV[11] ~= '' then redis.call('PUBLISH', ARGV[10], ARGV[11]) end
return {1}
"""
)

# KEYS: task, expiry, leases, every owner's order. ARGV: task id.
DELETE: Final = """
local held = redis.call('HMGET', KEYS[1], 'order', 'owner', 'active')
if held[1] then
  redis.call('ZREM', KEYS[4], held[1])
  if held[2] then redis.call('ZREM', held[2], held[1]) end
end
if held[3] then redis.call('SREM', held[3], ARGV[1]) end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""

# The owner's tasks that are not terminal, up to a limit. KEYS: the active set. ARGV: the task
# key prefix, the limit.
COUNT_ACTIVE: Final = (
    _COUNT_LIVE
    + """
return count_live(KEYS[1], ARGV[1], tonumber(ARGV[2]))
"""
)

# Index entries whose task hash is gone (Redis expired it). KEYS: two sorted sets, then one task
# key per member. ARGV: the members. Checked again here, so a concurrent write is never undone.
FORGET: Final = """
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('ZREM', KEYS[1], ARGV[i - 2])
    redis.call('ZREM', KEYS[2], ARGV[i - 2])
  end
end
return 1
"""


SCRIPTS: Final[Mapping[str, str]] = {
    "create": CREATE,
    "save": SAVE,
    "delete": DELETE,
    "forget": FORGET,
    "count_active": COUNT_ACTIVE,
}
"""The scripts by the name the store runs them under."""
