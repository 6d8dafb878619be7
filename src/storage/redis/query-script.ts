// One round trip per query: check the build version, choose an exact scan for small sets, run
// VSIM, and fetch each hit's attributes (Redis 8.0 has no VSIM WITHATTRIBS).
//
// KEYS[1] vector set, KEYS[2] meta hash
// ARGV: expected version, exact-up-to size, FP32 query blob, count, ef, filter ("" for none),
//       filter-ef, servable prefix (a build whose version starts with it can answer the query)
// Reply: {"stale", version-or-""} | {"ok", size, exact (0/1), current (0/1), id1, score1, attrs1, ...}
export const QUERY_SCRIPT = `
local version = redis.call('HGET', KEYS[2], 'version')
if not version or string.sub(version, 1, #ARGV[8]) ~= ARGV[8] then return {'stale', version or ''} end
local current = 0
if version == ARGV[1] then current = 1 end
local size = redis.call('VCARD', KEYS[1])
if size == 0 then return {'ok', 0, 1, current} end
local args = {'VSIM', KEYS[1], 'FP32', ARGV[3], 'WITHSCORES', 'COUNT', ARGV[4]}
local exact = 0
if size <= tonumber(ARGV[2]) then
  args[#args + 1] = 'TRUTH'
  exact = 1
else
  args[#args + 1] = 'EF'
  args[#args + 1] = ARGV[5]
end
if ARGV[6] ~= '' then
  args[#args + 1] = 'FILTER'
  args[#args + 1] = ARGV[6]
  args[#args + 1] = 'FILTER-EF'
  args[#args + 1] = ARGV[7]
end
local found = redis.call(unpack(args))
local reply = {'ok', size, exact, current}
for i = 1, #found, 2 do
  reply[#reply + 1] = found[i]
  reply[#reply + 1] = found[i + 1]
  reply[#reply + 1] = redis.call('VGETATTR', KEYS[1], found[i]) or ''
end
return reply
`;
