// The rest of a query whose nearest elements were found by a VSIM of their own (threaded-nearest.ts):
// check the build is still the one they were found in, read the hits' attributes, and name those of
// the nearest that hold the query's common words, as QUERY_SCRIPT does after its own VSIM. Sent
// with no ids in the VSIM's own pipeline (it runs once the VSIM is done), it checks the build alone
// and names the products written since the generation of the caller's copies (nearest-copies.ts),
// so that a query whose nearest elements are all held there takes one round trip.
//
// KEYS[1] vector set, KEYS[2] meta hash, KEYS[3] lexical key prefix (see lexical-script.ts)
// ARGV: expected version, servable prefix (as QUERY_SCRIPT's), the build the nearest were found in
//       ("" for none), how many of them are hits, the query's common words ("\n"-separated, "" for
//       none: QUERY_SCRIPT names them), "1" if the query has filters (else ""), the generation
//       ("<build>:<count>") the caller holds copies as of ("" for none), "1" to be sent the nearest
//       elements' docs with common words (else ""), then the nearest elements' ids, best first
// Reply: {"split", layout} | {"stale", version-or-""} | {"moved"} (another build since)
//      | {"postings"} (filters, and a build with field postings: QUERY_SCRIPT answers them from those)
//      | {"ok", size, current (0/1), the build's generation ("" for no build), the products written
//         since the caller's generation ("\n"-separated; "*" when not known: the caller drops its
//         copies), attrs per hit, the nearest holding a common word as "<id> <stamp>" lines, and
//         when asked for, each nearest element's doc ("" for none)}
import { WRITE_LOG } from "./lexical-script.js";
import { HOLDERS_AMONG_LUA, WRITTEN_SINCE_LUA } from "./query-script.js";

export const NEAREST_SCRIPT = `${HOLDERS_AMONG_LUA}${WRITTEN_SINCE_LUA}
local meta = redis.call('HMGET', KEYS[2], 'version', 'lex', 'facets', 'parts')
if meta[4] then return {'split', meta[4]} end
local version = meta[1]
if not version or string.sub(version, 1, #ARGV[2]) ~= ARGV[2] then return {'stale', version or ''} end
if (meta[2] or '') ~= ARGV[3] then return {'moved'} end
if ARGV[6] == '1' and meta[3] and meta[3] == meta[2] then return {'postings'} end
local current = 0
if version == ARGV[1] then current = 1 end
local reply = {'ok', redis.call('VCARD', KEYS[1]), current, '', '*'}
if meta[2] then
  local base = KEYS[3] .. meta[2] .. ':'
  local written = tonumber(redis.call('GET', base .. 'writes') or '0')
  reply[4] = meta[2] .. ':' .. written
  if ARGV[7] == reply[4] then
    reply[5] = ''
  elseif ARGV[7] ~= '' then
    local ids = writtenSince(ARGV[7], meta[2], base, written, ${WRITE_LOG})
    if ids then reply[5] = table.concat(ids, '\\n') end
  end
end
-- Copied, not unpacked whole: a topK of 500 with a common word names 2,500.
local nearest = {}
for i = 9, #ARGV do nearest[#nearest + 1] = ARGV[i] end
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
local lines, docs = {}, {}
local keep = ARGV[8] == '1' and function(doc) docs[#docs + 1] = doc or '' end
if ARGV[5] ~= '' and meta[2] then
  local needles = {}
  for word in string.gmatch(ARGV[5], '[^\\n]+') do needles[#needles + 1] = ' ' .. word .. ' ' end
  holdersAmong(KEYS[3] .. meta[2] .. ':docs', nearest, needles, {}, function(id, stamp) lines[#lines + 1] = id .. ' ' .. stamp end, keep)
end
reply[#reply + 1] = table.concat(lines, '\\n')
for _, doc in ipairs(docs) do reply[#reply + 1] = doc end
return reply
`;
