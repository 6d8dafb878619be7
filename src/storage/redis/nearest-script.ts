// The rest of a query whose nearest elements were found by a VSIM of their own (threaded-nearest.ts):
// check the build is still the one they were found in, read the hits' attributes, and name those of
// the nearest that hold the query's common words, as QUERY_SCRIPT does after its own VSIM.
//
// KEYS[1] vector set, KEYS[2] meta hash, KEYS[3] lexical key prefix (see lexical-script.ts)
// ARGV: expected version, servable prefix (as QUERY_SCRIPT's), the build the nearest were found in
//       ("" for none), how many of them are hits, the query's common words ("\n"-separated, "" for
//       none: QUERY_SCRIPT names them), "1" if the query has filters (else ""), then the nearest
//       elements' ids, best first
// Reply: {"split", layout} | {"stale", version-or-""} | {"moved"} (another build since)
//      | {"postings"} (filters, and a build with field postings: QUERY_SCRIPT answers them from those)
//      | {"ok", size, current (0/1), attrs per hit, the nearest holding a common word as
//         "<id> <stamp>" lines}
import { HOLDERS_AMONG_LUA } from "./query-script.js";

export const NEAREST_SCRIPT = `${HOLDERS_AMONG_LUA}
local meta = redis.call('HMGET', KEYS[2], 'version', 'lex', 'facets', 'parts')
if meta[4] then return {'split', meta[4]} end
local version = meta[1]
if not version or string.sub(version, 1, #ARGV[2]) ~= ARGV[2] then return {'stale', version or ''} end
if (meta[2] or '') ~= ARGV[3] then return {'moved'} end
if ARGV[6] == '1' and meta[3] and meta[3] == meta[2] then return {'postings'} end
local current = 0
if version == ARGV[1] then current = 1 end
local reply = {'ok', redis.call('VCARD', KEYS[1]), current}
-- Copied, not unpacked whole: a topK of 500 with a common word names 2,500.
local nearest = {}
for i = 7, #ARGV do nearest[#nearest + 1] = ARGV[i] end
local hits = math.min(tonumber(ARGV[4]), #nearest)
-- A build with postings keeps every element's attributes in a hash too (QUERY_SCRIPT), read a
-- thousand per HMGET as there.
local attrs = {}
if meta[3] and meta[3] == meta[2] then
  for from = 1, hits, 1000 do
    for _, a in ipairs(redis.call('HMGET', KEYS[3] .. meta[3] .. ':attr', unpack(nearest, from, math.min(hits, from + 999)))) do attrs[#attrs + 1] = a end
  end
end
for k = 1, hits do
  reply[#reply + 1] = attrs[k] or redis.call('VGETATTR', KEYS[1], nearest[k]) or ''
end
local lines = {}
if ARGV[5] ~= '' and meta[2] then
  local needles = {}
  for word in string.gmatch(ARGV[5], '[^\\n]+') do needles[#needles + 1] = ' ' .. word .. ' ' end
  holdersAmong(KEYS[3] .. meta[2] .. ':docs', nearest, needles, {}, function(id, stamp) lines[#lines + 1] = id .. ' ' .. stamp end)
end
reply[#reply + 1] = table.concat(lines, '\\n')
return reply
`;
