// One round trip per query: check the build version (and the lexical vocabulary the caller expanded
// the query's words with), choose an exact scan for small sets, run VSIM, fetch each hit's
// attributes (Redis 8.0 has no VSIM WITHATTRIBS), and score the holders of the queried words.
//
// KEYS[1] vector set, KEYS[2] meta hash, KEYS[3] lexical key prefix (see lexical-script.ts)
// ARGV: expected version, exact-up-to size, FP32 query blob, count (0: no VSIM), ef, filter ("" for
//       none), filter-ef, servable prefix (a build whose version starts with it can answer the
//       query), then for lexical matching (ARGV[9] "" when none): vocabulary build, vocabulary size,
//       most holders of a word, words...
// Reply: {"stale", version-or-""} | {"vocabulary"}
//      | {"ok", size, exact (0/1), hit count, current (0/1: built at the expected version),
//         (id, score, attrs) per hit, common word count, common words...,
//         (id, FP32 element blob, attrs, words) per holder}
export const QUERY_SCRIPT = `
local version = redis.call('HGET', KEYS[2], 'version')
if not version or string.sub(version, 1, #ARGV[8]) ~= ARGV[8] then return {'stale', version or ''} end
local current = 0
if version == ARGV[1] then current = 1 end
local base
if ARGV[9] ~= '' then
  local build = redis.call('HGET', KEYS[2], 'lex')
  if build ~= ARGV[9] then return {'vocabulary'} end
  base = KEYS[3] .. build .. ':'
  if redis.call('LLEN', base .. 'vocab') ~= tonumber(ARGV[10]) then return {'vocabulary'} end
end
local size = redis.call('VCARD', KEYS[1])
local reply = {'ok', size, 1, 0, current}
if size > 0 and tonumber(ARGV[4]) > 0 then
  local args = {'VSIM', KEYS[1], 'FP32', ARGV[3], 'WITHSCORES', 'COUNT', ARGV[4]}
  if size <= tonumber(ARGV[2]) then
    args[#args + 1] = 'TRUTH'
  else
    reply[3] = 0
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
  reply[4] = #found / 2
  for i = 1, #found, 2 do
    reply[#reply + 1] = found[i]
    reply[#reply + 1] = found[i + 1]
    reply[#reply + 1] = redis.call('VGETATTR', KEYS[1], found[i]) or ''
  end
end
if not base then
  reply[#reply + 1] = 0
  return reply
end
local most = tonumber(ARGV[11])
local holders, seen, common = {}, {}, {}
for i = 12, #ARGV do
  local key = base .. 'w:' .. ARGV[i]
  if redis.call('SCARD', key) > most then
    common[#common + 1] = ARGV[i]
  else
    for _, id in ipairs(redis.call('SMEMBERS', key)) do
      if not seen[id] then
        seen[id] = true
        holders[#holders + 1] = id
      end
    end
  end
end
reply[#reply + 1] = #common
for i = 1, #common do reply[#reply + 1] = common[i] end
for _, id in ipairs(holders) do
  -- RAW: the stored float32 blob (elements are unit length), dotted by the caller; a holder without
  -- an element is between a removal's two writes and is not searchable.
  local e = redis.call('VEMB', KEYS[1], id, 'RAW')
  if e then
    reply[#reply + 1] = id
    reply[#reply + 1] = e[2]
    reply[#reply + 1] = redis.call('VGETATTR', KEYS[1], id) or ''
    reply[#reply + 1] = redis.call('HGET', base .. 'docs', id) or ''
  end
end
return reply
`;
