// A catalog's lexical index lives beside its vector set, under the same hash tag, in keys named by
// a build id (meta hash field `lex`), so a rebuild writes a new build aside and switches to it at
// once, like the vector set's rename:
//   <base>docs      hash   product id -> "#<stamp> " then its words, space-separated; the stamp is new
//                          at every write of the product (holder-cache.ts); builds written before
//                          stamps hold the words alone
//   <base>w:<word>  hash   the products holding the word (a posting list) -> their stamps; a set of
//                          the products in builds written before stamps (ids not starting 'h')
//   <base>r:<word>  zset   for a word of more than RANKED_FROM holders ('h' builds only), its first
//                          RANKED_CAP holders by holder order (search/lexical.ts holderOrder:
//                          boosted first, then fewest words), which leads their stamps as
//                          "<order>.": a word held by too many products to score them all is read
//                          from its first holders, the best lexical matches of a word typed alone
//   <base>vocab     list   every word the build has held, in order of first appearance (append-only,
//                          so a process reads only what was added since it last looked)
//   <base>f:<token> set    the products holding a metadata value (field postings, search/filter-facets.ts)
//   <base>fdocs     hash   product id -> its postings' tokens, newline-separated
//   <base>vec       hash   product id -> its element as FP32 (the vector set's copy, for scoring
//                          a filter's few candidates in one HMGET: VEMB costs 9-14 us an element)
//   <base>attr      hash   product id -> its attribute JSON (likewise; VGETATTR costs 5 us)
//   <base>writes    string how many product writes (upserts, removals) the build has taken
//   <base>wlog      list   the build's last WRITE_LOG writes (LEARNED_CATCH_UP without field
//                          postings) since it became current, as "<count> <id>", oldest first: a
//                          caller holding a filter's candidates as of a recent count (with field
//                          postings, or learned without) reads only the products written since
//                          (query-script.ts mode 4)
//   <base>valuesets string the fields whose values get a vector set of their own in this build
//                          (SEARCH_VALUE_SETS when it began), as their tokens' heads ('["shop",'),
//                          newline-separated; written before the build's first product
//   <base>fv:<token> vector set  the elements (unit length, with their attributes) of the products
//                          holding a value of such a field: HNSW over just them (query-script.ts)
// with <base> = <prefix>{<catalogId>}:lex:<build>:

/**
 * Words held by more products than this keep their holders ranked too (`r:<word>`). Below it a
 * query reads every holder anyway (SEARCH_LEXICAL_MAX_HOLDERS is this by default), and most of a
 * catalog's words (its long tail, SKUs, sizes) need no sorted set of their own.
 */
export const RANKED_FROM = 128;
/**
 * A word's ranked set keeps only its first this many holders: a query reads a few dozen of them
 * (at most about 2,000, widening), and a word held by 100,000 products would otherwise cost 100,000
 * sorted-set entries (about 100 bytes each). Removals that leave RANKED_REFILL of them read the
 * word's holders afresh (one HGETALL of the word).
 */
export const RANKED_CAP = 1000;
const RANKED_REFILL = RANKED_CAP / 4;
/**
 * Writes a build's log keeps (about 46 bytes each with UUID product ids). At an import of 100
 * products/s, a filter held by a process and asked again within 10 s is brought up to date from
 * the log instead of named anew.
 */
export const WRITE_LOG = 1024;
/**
 * Writes a filter learned without field postings (SlotIndex.learn) may be behind the build and
 * still be brought up to date from the write log (query-script.ts mode 4): each product written
 * since is read whole from the vector set (a VEMB and a VGETATTR, about 20 us), so at most about
 * 5 ms of Redis's main thread. Further behind (an import of 100 products/s, the filter asked less
 * than every 2.5 s), it is learned anew once the catalog stands still (filter-learning.ts). A
 * build written without postings logs only this many writes: about 12 KB a catalog.
 */
export const LEARNED_CATCH_UP = 256;

// Sets (or, with no words and no tokens, removes) one product's words and field postings.
// KEYS[1] meta hash, KEYS[2] lexical key prefix (up to the build id)
// ARGV: build ("" = the meta hash's current one), product id, the write's stamp, words separated by
//       spaces, and with field postings only (SEARCH_FILTER_POSTINGS; without them the call stops
//       at the words): the element as FP32 ("" to remove), its attribute JSON, then the product's
//       posting tokens (search/filter-facets.ts), one per argument
// Reply: 0 when the catalog has no build; else 1, or the keys of the value sets the product's
//        element must be written to. The caller writes it there with VADD ... CAS: inside a script a
//        VADD's neighbour search runs on Redis's main thread, holding up every other client.
export const LEXICAL_PUT_SCRIPT = `
local build = ARGV[1]
if build == '' then build = redis.call('HGET', KEYS[1], 'lex') end
-- No build: the index is gone or predates lexical matching; its version forces a rebuild.
if not build then return 0 end
local base = KEYS[2] .. build .. ':'
-- Every write counts: a process holding a filter's candidates as of a count holds them as they are
-- while it stays the same (query-script.ts).
local written = redis.call('INCR', base .. 'writes')
local id = ARGV[2]
local old = redis.call('HGET', base .. 'docs', id)
local had, now = {}, {}
-- Words never start with '#': a leading token that does is the stamp.
if old then for w in string.gmatch((string.gsub(old, '^#%S*', '')), '%S+') do had[w] = true end end
for w in string.gmatch(ARGV[4], '%S+') do now[w] = true end
-- Builds named 'h...' keep each word's holders in a hash of their stamps, so a query reads holders
-- and stamps in one HGETALL a word; older builds keep a set, and the stamps in docs alone.
local hashed = string.sub(build, 1, 1) == 'h'
-- A holder's place in the ranked sets; stamps written before the order was kept come last.
local function order(stamp) return tonumber(string.match(stamp, '^(%d+)%.') or '999999') end
-- A word's ranked set keeps its first RANKED_CAP holders in holder order. Once it has left others
-- out, a member "" scored +inf marks it (product ids are never empty): it is then the word's first
-- holders, so a holder joins it only by coming before its last one.
local function trim(ranks)
  local over = redis.call('ZCARD', ranks) - ${RANKED_CAP}
  if redis.call('ZSCORE', ranks, '') then over = over - 1 end
  if over > 0 then
    redis.call('ZREMRANGEBYRANK', ranks, ${RANKED_CAP}, ${RANKED_CAP} + over - 1)
    redis.call('ZADD', ranks, '+inf', '')
  end
end
local function rebuild(key, ranks)
  redis.call('DEL', ranks)
  local entries = redis.call('HGETALL', key)
  for j = 1, #entries, 2 do redis.call('ZADD', ranks, order(entries[j + 1]), entries[j]) end
  trim(ranks)
end
for w in pairs(had) do
  if not now[w] then
    if hashed then
      local key, ranks = base .. 'w:' .. w, base .. 'r:' .. w
      redis.call('HDEL', key, id)
      if redis.call('HLEN', key) <= ${RANKED_FROM} then
        redis.call('DEL', ranks)
      elseif redis.call('ZREM', ranks, id) == 1 and redis.call('ZSCORE', ranks, '') and redis.call('ZCARD', ranks) <= ${RANKED_REFILL} then
        -- Removals have left too few of the first holders: read them afresh.
        rebuild(key, ranks)
      end
    else
      redis.call('SREM', base .. 'w:' .. w, id)
    end
  end
end
for w in pairs(now) do
  local key = base .. 'w:' .. w
  if hashed then
    local added = redis.call('HSET', key, id, ARGV[3]) == 1
    local n = redis.call('HLEN', key)
    if added and n == 1 then redis.call('RPUSH', base .. 'vocab', w) end
    local ranks = base .. 'r:' .. w
    if n > ${RANKED_FROM} then
      local mine = order(ARGV[3])
      if redis.call('EXISTS', ranks) == 0 then
        -- The word has just passed RANKED_FROM holders (or was indexed before ranked sets).
        rebuild(key, ranks)
      elseif not redis.call('ZSCORE', ranks, '') then
        redis.call('ZADD', ranks, mine, id)
        trim(ranks)
      else
        local last = redis.call('ZRANGE', ranks, -2, -2, 'WITHSCORES')
        if last[2] and mine <= tonumber(last[2]) then
          redis.call('ZADD', ranks, mine, id)
          trim(ranks)
        elseif redis.call('ZREM', ranks, id) == 1 and redis.call('ZCARD', ranks) <= ${RANKED_REFILL} then
          -- It moved past the first holders kept (a rank or words changed), leaving too few.
          rebuild(key, ranks)
        end
      end
    end
  elseif not had[w] then
    redis.call('SADD', key, id)
    if redis.call('SCARD', key) == 1 then redis.call('RPUSH', base .. 'vocab', w) end
  end
end
if ARGV[4] == '' then redis.call('HDEL', base .. 'docs', id) else redis.call('HSET', base .. 'docs', id, '#' .. ARGV[3] .. ' ' .. ARGV[4]) end
-- Logged only for writes to the current build: no process holds candidates of a build still
-- written aside, and a rebuild would push and trim an entry per product for nothing (a caller
-- behind an unlogged write finds the log's counts broken and reads its candidates anew).
if ARGV[1] == '' then
  redis.call('RPUSH', base .. 'wlog', written .. ' ' .. id)
  redis.call('LTRIM', base .. 'wlog', #ARGV < 5 and -${LEARNED_CATCH_UP} or -${WRITE_LOG}, -1)
end
if #ARGV < 5 then return 1 end
local oldTokens = redis.call('HGET', base .. 'fdocs', id)
local hadT, nowT = {}, {}
if oldTokens then for t in string.gmatch(oldTokens, '[^\\n]+') do hadT[t] = true end end
for i = 7, #ARGV do nowT[ARGV[i]] = true end
for t in pairs(hadT) do
  if not nowT[t] then redis.call('SREM', base .. 'f:' .. t, id) end
end
for t in pairs(nowT) do
  if not hadT[t] then redis.call('SADD', base .. 'f:' .. t, id) end
end
-- The value sets of this build's fields: the product leaves those of the values it no longer
-- holds here; its element is written again to those of the values it holds (it may have changed)
-- by the caller, told their keys.
local heads = redis.call('GET', base .. 'valuesets')
local valueSets = {}
if heads then
  local function valued(t)
    for head in string.gmatch(heads, '[^\\n]+') do
      if string.sub(t, 1, #head) == head then return true end
    end
    return false
  end
  for t in pairs(hadT) do
    if not nowT[t] and valued(t) then redis.call('VREM', base .. 'fv:' .. t, id) end
  end
  if ARGV[5] ~= '' then
    for t in pairs(nowT) do
      if valued(t) then valueSets[#valueSets + 1] = base .. 'fv:' .. t end
    end
  end
end
if #ARGV < 7 then redis.call('HDEL', base .. 'fdocs', id) else redis.call('HSET', base .. 'fdocs', id, table.concat(ARGV, '\\n', 7)) end
if ARGV[5] == '' then
  redis.call('HDEL', base .. 'vec', id)
  redis.call('HDEL', base .. 'attr', id)
else
  redis.call('HSET', base .. 'vec', id, ARGV[5])
  redis.call('HSET', base .. 'attr', id, ARGV[6])
end
if #valueSets > 0 then return valueSets end
return 1
`;

// The catalog's current build and its vocabulary list from an offset (all of it for another build).
// KEYS[1] meta hash, KEYS[2] lexical key prefix; ARGV: known build, known size
// Reply: {build or "", whole (0/1), words...}
export const VOCABULARY_SCRIPT = `
local build = redis.call('HGET', KEYS[1], 'lex')
if not build then return {'', 1} end
local from = 0
if build == ARGV[1] then from = tonumber(ARGV[2]) end
local reply = {build, from == 0 and 1 or 0}
local words = redis.call('LRANGE', KEYS[2] .. build .. ':vocab', from, -1)
for i = 1, #words do reply[#reply + 1] = words[i] end
return reply
`;

/** A docs entry's stamp and its words (space-separated); builds written before stamps hold the words alone. */
export function docParts(doc: string): { stamp: string; words: string } {
  const space = stampEnd(doc);
  return space < 0 ? { stamp: "", words: doc } : { stamp: doc.slice(1, space), words: doc.slice(space + 1) };
}

/** A doc's words alone (docParts without the stamp), for scoring thousands of candidates a query. */
export function docWords(doc: string): string {
  const space = stampEnd(doc);
  return space < 0 ? doc : doc.slice(space + 1);
}

/** Where a doc's "#<stamp>" ends (its first space), or -1 when it has none. */
function stampEnd(doc: string): number {
  return doc.charCodeAt(0) === 35 ? doc.indexOf(" ", 1) : -1;
}

// The holders a query found but this process has not read under their current stamps
// (holder-cache.ts), read whole: stamp, element, attributes and words; also a filter's candidates
// (query-script.ts mode 2), which hold no word of the query, so need no particular build. Builds
// with copies of the elements (field postings) are read with plain HMGETs instead (slot-index.ts).
// KEYS[1] vector set, KEYS[2] meta hash, KEYS[3] lexical key prefix; ARGV: the build the query
// used ("" for the current one), then product ids
// Reply: {"vocabulary"} when the catalog's build has changed since (the caller asks again), else
//        {"ok", (id, stamp or "", FP32 element blob, attrs, words) per product still holding words}
export const HOLDERS_SCRIPT = `
local meta = redis.call('HMGET', KEYS[2], 'lex', 'facets')
local build = ARGV[1]
if build == '' then build = meta[1] end
if not build or meta[1] ~= build then return {'vocabulary'} end
local base = KEYS[3] .. build .. ':'
-- A build with field postings keeps a copy of every element and its attributes in two hashes: a
-- few hundred per HMGET instead of a VEMB (9-14 us) and a VGETATTR (5 us) each.
local copies = meta[2] == build
local reply = {'ok'}
for from = 2, #ARGV, 500 do
  local ids = {unpack(ARGV, from, math.min(#ARGV, from + 499))}
  local docs = redis.call('HMGET', base .. 'docs', unpack(ids))
  local vecs = copies and redis.call('HMGET', base .. 'vec', unpack(ids))
  local attrs = copies and redis.call('HMGET', base .. 'attr', unpack(ids))
  for k, id in ipairs(ids) do
    local doc, e, a = docs[k], nil, nil
    if doc and copies then
      e, a = vecs[k], attrs[k]
    elseif doc then
      e = redis.call('VEMB', KEYS[1], id, 'RAW')
      e = e and e[2]
      a = e and redis.call('VGETATTR', KEYS[1], id)
    end
    if e then
      local stamp, words = string.match(doc, '^#(%S+) (.*)$')
      if not stamp then stamp, words = '', doc end
      reply[#reply + 1] = id
      reply[#reply + 1] = stamp
      reply[#reply + 1] = e
      reply[#reply + 1] = a or ''
      reply[#reply + 1] = words
    end
  end
end
return reply
`;
