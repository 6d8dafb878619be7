import { LEARNED_CATCH_UP, RANKED_FROM, WRITE_LOG } from "./lexical-script.js";

/** How many times more nearest elements a query with a common word asks for. */
export const COMMON_WORD_NEAREST = 5;
/**
 * ... of a set of more than the caller's large size: crediting the 100 nearest instead of 50 took the
 * service's recall@10 from 0.951-0.953 to 0.963-0.966 at 100k (raw VSIM's 0.967-0.968), for a tenth
 * of the QPS at 8 clients there; a large set's VSIM costs several times as much, so there it is
 * cheap (README "Lexical matching at scale").
 */
export const COMMON_WORD_NEAREST_LARGE = 10;

/** The widening of a query with a common word in a set of `size` elements (QUERY_SCRIPT decides alike). */
export function commonWordNearest(size: number, largeFrom: number): number {
  return size > largeFrom ? COMMON_WORD_NEAREST_LARGE : COMMON_WORD_NEAREST;
}
/**
 * An in filter of up to this many values, each with a value set, is answered by HNSW over those
 * sets (one VSIM each, merged); more values ask the whole set, as a single larger search is cheaper.
 */
export const VALUE_SETS_PER_GROUP = 8;
/**
 * Value sets standing for one group of a filter whose other groups pass at most this share of
 * their elements are scanned exactly with the whole filter (VSIM ... TRUTH FILTER) rather than asked
 * of HNSW at a depth of count / share and post-filtered, up to ARGV[15] elements (README
 * "Filtered search": at 1M, HNSW over a 100,000-element value set gave recall 0.973 at p50 19 ms,
 * the scan 0.995 at 175 ms, so ARGV[15] keeps the scan to sets a fifth that size).
 */
export const VALUE_SET_SCAN_SHARE = 0.25;
/**
 * HNSW over a value set of at most this many elements searches SEARCH_EF deep, as over the whole
 * set: at 100k, over sets of 10,000, twice that depth bought no recall (0.9759 either way) and cost
 * 12-24% of their QPS at 8 clients (README "Filtered search", session 37).
 */
export const VALUE_SET_EF_FROM = 10_000;
/**
 * How many times SEARCH_EF deep HNSW searches a value set of ten times VALUE_SET_EF_FROM elements
 * or more; between, the depth grows with the logarithm of the set's size, as HNSW's path to the
 * nearest does. A set's answer is what a storefront's filter asks, merged with its other values'
 * sets' (each missing a few), and at 1M two 10% sections of 100,000 merged gave recall 0.947 at
 * EF 250, 0.956-0.959 at 500, p99 as at 250 (README "Filtered search").
 */
export const VALUE_SET_EF_FACTOR = 2;
/**
 * Members of the smallest posting sampled to bound an intersection of eq filters: a fixed cost of
 * 1,024 lookups, where counting it (SINTERCARD) scans the posting until the limit.
 */
export const INTERSECTION_SAMPLE = 1024;

/**
 * Lua: holdersAmong(docsKey, ids, needles, skip, hold, read) calls hold(id, stamp) for each of `ids`
 * not in the table `skip` whose doc ("#<stamp> <words>", lexical-script.ts) holds one of `needles`
 * (" <word> "), reading the docs a few hundred per HMGET, and read(doc), if given, with each of
 * `ids`' docs in turn (false for none). A plain search at C speed: splitting each doc into its words
 * cost more Redis CPU than the query's other reads.
 */
export const HOLDERS_AMONG_LUA = `
local function holdersAmong(docsKey, ids, needles, skip, hold, read)
  for from = 1, #ids, 500 do
    local chunk = {unpack(ids, from, math.min(#ids, from + 499))}
    local docs = redis.call('HMGET', docsKey, unpack(chunk))
    for k, id in ipairs(chunk) do
      local doc = docs[k]
      if read then read(doc) end
      if doc and not skip[id] then
        local padded = doc .. ' '
        for _, needle in ipairs(needles) do
          if string.find(padded, needle, 1, true) then
            hold(id, string.match(doc, '^#(%S+)') or '')
            break
          end
        end
      end
    end
  end
end
`;

// The products written to the build `build` (keys under `base`, at write count `written`) since
// the generation a caller holds something as of (`held`, "<build>:<count>": a filter's
// candidates, copies of nearest elements), oldest first, each once: when that is at most `most`
// writes behind and the write log still has them all (each entry "<count> <id>"; counts from the
// next one on, so none went unlogged). Else nil.
export const WRITTEN_SINCE_LUA = `
local function writtenSince(held, build, base, written, most)
  local heldBuild, heldAt = string.match(held, '^(.+):(%d+)$')
  local behind = heldBuild == build and written - tonumber(heldAt)
  if not behind or behind <= 0 or behind > most then return nil end
  local log = redis.call('LRANGE', base .. 'wlog', -behind, -1)
  if #log ~= behind or tonumber(string.match(log[1], '^%d+')) ~= tonumber(heldAt) + 1 then return nil end
  local seen, ids = {}, {}
  for _, entry in ipairs(log) do
    local id = string.sub(entry, string.find(entry, ' ', 1, true) + 1)
    if not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
  return ids
end
`;

// One round trip per query: check the build version (and the lexical vocabulary the caller expanded
// the query's words with), choose how to find the nearest elements, fetch each hit's attributes
// (Redis 8.0 has no VSIM WITHATTRIBS), and list the holders of the queried words.
//
// How the nearest elements are found (README: "Filtered search"):
// - the eq/in filters' field postings (search/filter-facets.ts) hold at most ARGV[9] elements, or at most
//   ARGV[13] (when the caller holds them or is to, ARGV[12]) and plain HNSW (below) cannot be
//   asked: those elements, every one that can pass the filters, are the candidates. A caller
//   that holds them as of the build's current write count (ARGV[14]) is told so (mode 3); one
//   that holds them as of a count the build's write log still reaches back to is sent the
//   products written since, whole when they pass the filters' postings (mode 4); else
//   they are returned with their stamps for the caller to score exactly from its holder cache,
//   reading only what it lacks (mode 2). No VSIM, and no holders: the caller finds the query's
//   words among the candidates' own. But a filter on one field, not to be held, whose values'
//   sets (below) hold at most ARGV[9] elements is answered by an exact scan of those sets;
// - else, when an eq filter's value has a vector set of its own (a value set, lexical-script.ts),
//   or an in filter's every value (up to VALUE_SETS_PER_GROUP), the smallest such set or sets
//   stand for the whole one below (every element that can pass is in them; several are each
//   asked the same and their answers merged by score; HNSW searches each deeper the larger it is,
//   VALUE_SET_EF_FROM and VALUE_SET_EF_FACTOR); scanned exactly with the whole filter when
//   the other filters pass few of their elements (VALUE_SET_SCAN_SHARE) and they hold at most
//   ARGV[15];
// - else an exact scan (TRUTH) for sets of at most ARGV[2] elements (and for those value sets);
// - else, when the postings answer every filter and estimate that many elements pass, plain HNSW
//   asked for enough elements that about the count pass (the caller post-filters);
// - else HNSW (EF ARGV[5]) with the filter pushed down (FILTER-EF ARGV[7]); the caller widens.
//
// KEYS[1] vector set, KEYS[2] meta hash, KEYS[3] lexical key prefix (see lexical-script.ts)
// ARGV: expected version, exact-up-to size, FP32 query blob, count (0: no VSIM), ef, filter ("" for
//       none), filter-ef, servable prefix (a build whose version
//       starts with it can answer the query), most candidates scored exactly, posting group count,
//       most elements to ask plain HNSW for when the groups answer every filter (0: they do not;
//       then holders and hits failing the filters are left out or marked), 1 to name the
//       candidates by their stamps (the caller is to hold them) or 0 to return them whole, most
//       candidates scored exactly when plain HNSW cannot be asked for a filter held or to be
//       (ARGV[12]; at least ARGV[9]), the candidates' generation the caller holds ("" for none;
//       see the reply), most value-set elements scanned exactly with the filter, then per group
//       its token count and tokens; then for lexical matching ("" when none):
//       vocabulary build, vocabulary size, most holders of a word, most holders read of a word
//       held by more (its first in holderOrder), most such holders read in all, the set size past
//       which a query with a common word asks COMMON_WORD_NEAREST_LARGE times its count ("" for none), words...
// Without field postings, ARGV[14] is the generation of a filter's candidates the caller learned
// (SlotIndex.learn): answered in mode 3 as of the same generation, in mode 4 (every product written
// since whole, passing the filters or not: the caller applies them) when at most LEARNED_CATCH_UP
// writes behind, else {"written", the build's}.
// Reply: {"split", layout} | {"stale", version-or-""} | {"vocabulary"} | {"written", generation}
//      | {"ok", size, mode (0 HNSW, 1 exact scan, 2 candidates, 3 the caller's candidates, 4 the
//         caller's candidates brought up to date), hit
//         count, current (0/1: built at the expected version), the mode-2 candidates named by stamp
//         ("<id> <stamp>\n" lines, or ""; when the caller is not to hold them, their ids alone,
//         newline-separated; in mode 4 the ids written since, newline-separated; in
//         modes 0 and 1, how many candidates the filter would
//         have had it been held, or "" when it would not be answered from them), in modes 2 to 4
//         and in every mode of a build without postings the candidates' generation ("<build>:<write
//         count>", else ""), (id, score, attrs or '!'
//         when the postings say it fails the filters) per hit; in mode 2 the candidates named by
//         stamp that have none, in mode 4 those written since that pass, as (id,
//         FP32 element blob, attrs, words), and nothing after them; in modes 0 and
//         1, with lexical matching: 1 if a common word has holders not read (else 0), the
//         holders as "<id> <stamp>" lines, and the common words, newline-separated ("" for none)}
export const QUERY_SCRIPT = `${HOLDERS_AMONG_LUA}${WRITTEN_SINCE_LUA}
local meta = redis.call('HMGET', KEYS[2], 'version', 'lex', 'facets', 'parts')
-- A split catalog's own tag holds no set, only the names of its parts (vector-index.ts).
if meta[4] then return {'split', meta[4]} end
local version = meta[1]
if not version or string.sub(version, 1, #ARGV[8]) ~= ARGV[8] then return {'stale', version or ''} end
local current = 0
if version == ARGV[1] then current = 1 end
-- The best n of several VSIM WITHSCORES replies (flat id, score lists, each best first), each id once.
local function nearestOf(lists, n)
  local heads, out, seen = {}, {}, {}
  for k = 1, #lists do heads[k] = 1 end
  while #out < 2 * n do
    local best, score
    for k = 1, #lists do
      local i = heads[k]
      while lists[k][i] and seen[lists[k][i]] do i = i + 2 end
      heads[k] = i
      if lists[k][i] and (not best or tonumber(lists[k][i + 1]) > score) then best, score = k, tonumber(lists[k][i + 1]) end
    end
    if not best then break end
    local i = heads[best]
    seen[lists[best][i]] = true
    out[#out + 1] = lists[best][i]
    out[#out + 1] = lists[best][i + 1]
    heads[best] = i + 2
  end
  return out
end
local groups, at = {}, 16
for g = 1, tonumber(ARGV[10]) do
  local n = tonumber(ARGV[at])
  local group = {}
  for i = at + 1, at + n do group[#group + 1] = ARGV[i] end
  groups[g] = group
  at = at + n + 1
end
local base, hashed
if ARGV[at] ~= '' then
  local build = meta[2]
  -- lexical-script.ts: builds named 'h...' keep each word's holders with their stamps.
  hashed = string.sub(build or '', 1, 1) == 'h'
  if build ~= ARGV[at] then return {'vocabulary'} end
  base = KEYS[3] .. build .. ':'
  if redis.call('LLEN', base .. 'vocab') ~= tonumber(ARGV[at + 1]) then return {'vocabulary'} end
end
-- Each queried word's holder count, and whether one is common (more than \`most\` holders, ranked).
local most, ranked, budget, lens, anyCommon, largeFrom
if base then
  most, ranked, budget, lens, anyCommon = tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4]), {}, false
  largeFrom = tonumber(ARGV[at + 5])
  for i = at + 6, #ARGV do
    local key = base .. 'w:' .. ARGV[i]
    lens[i] = hashed and redis.call('HLEN', key) or redis.call('SCARD', key)
    if hashed and lens[i] > most and lens[i] > ${RANKED_FROM} then anyCommon = true end
  end
end
local size = redis.call('VCARD', KEYS[1])
local reply = {'ok', size, 1, 0, current, '', ''}
-- Products as the caller scores candidates (id, element, attributes, words), appended to the
-- reply: those of \`ids\` that still have an element, read from the build's copies under \`base\`
-- (with field postings) or else from the vector set (a VEMB and a VGETATTR each). docs: their
-- docs (false for none).
local function appendWhole(base, ids, docs)
  local copies = meta[3] and meta[3] == meta[2]
  local vecs = copies and redis.call('HMGET', base .. 'vec', unpack(ids))
  local attrs = copies and redis.call('HMGET', base .. 'attr', unpack(ids))
  for k, id in ipairs(ids) do
    local e, a
    if copies then
      e, a = vecs[k], attrs[k]
    else
      local raw = redis.call('VEMB', KEYS[1], id, 'RAW')
      e = raw and raw[2]
      a = e and redis.call('VGETATTR', KEYS[1], id)
    end
    if e then
      -- A doc is "#<stamp> <words>" (lexical-script.ts), or the words alone in builds before stamps.
      local doc = docs[k]
      local space = doc and string.byte(doc, 1) == 35 and string.find(doc, ' ', 2, true)
      reply[#reply + 1] = id
      reply[#reply + 1] = e
      reply[#reply + 1] = a or ''
      reply[#reply + 1] = space and string.sub(doc, space + 1) or doc or ''
      reply[4] = reply[4] + 1
    end
  end
end
-- Without field postings, the build's write count (lexical-script.ts): a caller that learned a
-- filter's candidates from an exact scan (SlotIndex.learn) as of the same count holds them as they
-- are (mode 3); as of an earlier count of the build that the write log reaches back to, at most
-- LEARNED_CATCH_UP writes behind, it is sent the products written since, whole, to pass through
-- the filters itself (mode 4); else it is told to learn them anew.
if not (meta[3] and meta[3] == meta[2]) then
  local written = meta[2] and tonumber(redis.call('GET', KEYS[3] .. meta[2] .. ':writes') or '0')
  local generation = meta[2] and (meta[2] .. ':' .. written)
  reply[7] = generation or ''
  if ARGV[14] ~= '' and tonumber(ARGV[4]) > 0 then
    if ARGV[14] == generation then
      reply[3] = 3
      return reply
    end
    local dbase = meta[2] and KEYS[3] .. meta[2] .. ':'
    local ids = dbase and writtenSince(ARGV[14], meta[2], dbase, written, ${LEARNED_CATCH_UP})
    if ids then
      local docs = redis.call('HMGET', dbase .. 'docs', unpack(ids))
      local present, presentDocs = {}, {}
      for k, id in ipairs(ids) do
        -- Removals take the words out first: no doc, and the product is no longer a candidate.
        if docs[k] then
          present[#present + 1] = id
          presentDocs[#presentDocs + 1] = docs[k]
        elseif redis.call('VISMEMBER', KEYS[1], id) == 1 then
          -- Written without words: it has no holder to hold (as when learned), so learned anew.
          return {'written', generation}
        end
      end
      reply[3] = 4
      reply[6] = table.concat(ids, '\\n')
      if #present > 0 then appendWhole(dbase, present, presentDocs) end
      return reply
    end
    return {'written', generation or ''}
  end
end
-- The elements answered as hits: the holders below need not ask VISMEMBER about them.
local members = {}
-- The hits known to pass the filters the postings decide (see judged below).
local passed = {}
local count = tonumber(ARGV[4])
-- The postings' upper bound on the elements passing the eq/in filters (the smallest group's sum),
-- and their estimate of how many pass (the groups taken as independent).
local smallest, passing, estimate, fbase
-- Each eq/in token's posting size.
local postings = {}
-- The value sets (lexical-script.ts) to ask HNSW instead of the whole set (one group's: its
-- values'), each one's size and their sum; scanSets: scanned exactly (TRUTH) instead, few as
-- they are.
local vkeys, vsizes, vsize, scanSets
-- Whether the postings decide every filter of the query (all eq/in, postings of this build): then a
-- product outside them fails the query, and is neither returned with its attributes nor as a holder.
local judged = false
-- Whether the element holds a posting of every group (but group \`known\`, already seen to hold one).
local function passes(id, known)
  for g = 1, #groups do
    if g ~= known then
      local any = false
      for _, t in ipairs(groups[g]) do
        if redis.call('SISMEMBER', fbase .. t, id) == 1 then any = true break end
      end
      if not any then return false end
    end
  end
  return true
end
if #groups > 0 and meta[3] and meta[3] == meta[2] then
  -- The build's write count (lexical-script.ts): a caller holding this filter's candidates as of
  -- the same count holds them as they are, and is sent none (mode 3), nor is their path chosen again.
  local dbase = KEYS[3] .. meta[3] .. ':'
  local written = tonumber(redis.call('GET', dbase .. 'writes') or '0')
  local generation = meta[3] .. ':' .. written
  fbase = dbase .. 'f:'
  if size > 0 and count > 0 and ARGV[14] == generation then
    reply[3] = 3
    reply[7] = generation
    return reply
  end
  -- Held as of an earlier count of this build: the writes since. A product written since is
  -- either a candidate now, sent whole, or no longer one.
  local ids = size > 0 and count > 0 and writtenSince(ARGV[14], meta[3], dbase, written, ${WRITE_LOG})
  if ids then
    reply[3] = 4
    reply[7] = generation
    local passing = {}
    for _, id in ipairs(ids) do
      if passes(id) then passing[#passing + 1] = id end
    end
    reply[6] = table.concat(ids, '\\n')
    for from = 1, #passing, 500 do
      local chunk = {unpack(passing, from, math.min(#passing, from + 499))}
      appendWhole(dbase, chunk, redis.call('HMGET', dbase .. 'docs', unpack(chunk)))
    end
    return reply
  end
  judged = tonumber(ARGV[11]) > 0
  estimate = size
  for g = 1, #groups do
    local n = 0
    for _, t in ipairs(groups[g]) do
      postings[t] = redis.call('SCARD', fbase .. t)
      n = n + postings[t]
    end
    if not passing or n < passing then smallest, passing = g, n end
    estimate = estimate * math.min(1, n / math.max(size, 1))
  end
  -- Several eq filters: their intersection's own size, which is often far below the smallest
  -- filter's (two 10% filters: 1%). First a sample of the smallest posting, each member looked up
  -- in the others: exact when it is the whole posting, else it bounds the intersection (4 sigma),
  -- and when the bounds fall on one side of what this query may score, that is all the path needs.
  -- SINTERCARD (which scans until its limit: at 1M, two 10% filters, 23 ms) only when they straddle it.
  local single = #groups > 1
  for g = 1, #groups do single = single and #groups[g] == 1 end
  local fewest, heldMost = tonumber(ARGV[9]), math.max(tonumber(ARGV[9]), tonumber(ARGV[13]))
  -- What this query may score (ARGV[12]: the filter is held or to be).
  local most = ARGV[12] == '1' and heldMost or fewest
  -- The candidates the filter would have if held: passing, or the estimate when above it.
  local guessed = passing
  if single and passing > fewest then
    local picked = redis.call('SRANDMEMBER', fbase .. groups[smallest][1], ${INTERSECTION_SAMPLE})
    -- One SMISMEMBER per other posting over the sample's survivors so far.
    local survivors = picked
    for g = 1, #groups do
      if g ~= smallest and #survivors > 0 then
        local found, kept = redis.call('SMISMEMBER', fbase .. groups[g][1], unpack(survivors)), {}
        for k = 1, #survivors do
          if found[k] == 1 then kept[#kept + 1] = survivors[k] end
        end
        survivors = kept
      end
    end
    local hits = #survivors
    -- (+ 3: with no hits seen, the bound a sample of this size still leaves.)
    local scale, spread = passing / #picked, 4 * math.sqrt(hits)
    if #picked >= passing then
      passing, estimate = hits, hits
    elseif (hits + spread + 3) * scale <= most then
      -- At most \`most\`: passing is that bound (the candidates path's SINTER counts them exactly).
      passing, estimate = math.ceil((hits + spread + 3) * scale), math.floor(hits * scale)
    elseif (hits - spread) * scale > most then
      estimate = math.floor(hits * scale)
    else
      local args = {'SINTERCARD', #groups}
      for g = 1, #groups do args[#args + 1] = fbase .. groups[g][1] end
      args[#args + 1] = 'LIMIT'
      args[#args + 1] = most + 1
      local n = redis.call(unpack(args))
      -- n is exact up to the limit; past it, n only says "at least", which may exceed the estimate.
      if n <= most then
        passing = n
        estimate = n
      else
        estimate = math.max(math.floor(hits * scale), n)
      end
    end
    guessed = math.min(passing, estimate)
  end
  -- Past \`fewest\`, candidates only where plain HNSW cannot be asked for enough elements (below),
  -- and not for a filter one of whose groups has value sets: HNSW over just their products (the
  -- smallest such sets), everything below as for the whole set. Except several groups asked again
  -- soon (ARGV[12]): their candidates, held from then on, answer exactly without the SINTERCARD
  -- above, where the sets answer one group and post-filter the others (at 1M, two 10% filters:
  -- held 24 ms p99, over a value set 46 ms and recall 0.955).
  local plainly = judged and math.ceil(count * size / math.max(estimate, 1)) <= tonumber(ARGV[11])
  -- A filter on one field passed by at most \`fewest\`, not to be held: read whole, its candidates
  -- would cost Redis and the caller a copy of each on every query (2,000: 12-15 ms of Redis). When
  -- its values' sets hold at most \`fewest\` elements, scanning them exactly (VSIM TRUTH) finds the
  -- nearest for a fraction of that (the query's words credited from their holders, as for HNSW).
  -- Held (asked again soon), the candidates cost less still.
  local unheld = #groups == 1 and passing <= fewest and ARGV[12] ~= '1'
  if passing > fewest or unheld then
    local vbase = KEYS[3] .. meta[3] .. ':fv:'
    for g = 1, #groups do
      if #groups[g] <= ${VALUE_SETS_PER_GROUP} then
        -- Every value some product holds must have its set, else the field has none (or a write is
        -- between its postings and its sets): then the whole set.
        local keys, sizes, n, whole = {}, {}, 0, true
        for _, t in ipairs(groups[g]) do
          local inSet = redis.call('VCARD', vbase .. t)
          if inSet > 0 then
            keys[#keys + 1] = vbase .. t
            sizes[#keys] = inSet
            n = n + inSet
          elseif postings[t] > 0 then
            whole = false
          end
        end
        if whole and n > 0 and n < (vsize or size) then vkeys, vsizes, vsize = keys, sizes, n end
      end
    end
  end
  if unheld and vkeys then
    if vsize <= fewest then scanSets = true else vkeys, vsizes, vsize = nil, nil, nil end
  end
  -- Whether a caller holding the filter is answered from its candidates (up to heldMost of them;
  -- a filter whose sets are scanned has at most \`fewest\`).
  local holdable = scanSets or (not plainly and (not vkeys or #groups > 1))
  local fromCandidates = (passing <= fewest and not scanSets) or (ARGV[12] == '1' and passing <= heldMost and holdable)
  if size > 0 and count > 0 and fromCandidates then
    reply[7] = generation
    -- Every element holding a posting of the smallest group and one of each other group's.
    reply[3] = 2
    local seen, ids = {}, {}
    if single then
      local keys = {}
      for g = 1, #groups do keys[g] = fbase .. groups[g][1] end
      ids = redis.call('SINTER', unpack(keys))
    end
    for _, t in ipairs(single and {} or groups[smallest]) do
      for _, id in ipairs(redis.call('SMEMBERS', fbase .. t)) do
        if not seen[id] then
          seen[id] = true
          if passes(id, smallest) then ids[#ids + 1] = id end
        end
      end
    end
    -- Not to be held: their ids alone (reply[6], newline-separated), which the caller reads whole
    -- with plain HMGETs. Redis answers those without turning thousands of values into Lua and back:
    -- at 100k, 1,000 candidates read and returned whole here held its main thread 6.0-7.3 ms a
    -- query, their ids and the HMGETs 4.4 ms (docs/filtered-search-measurements.md, session 42).
    if ARGV[12] ~= '1' then
      reply[6] = table.concat(ids, '\\n')
      return reply
    end
    -- Each candidate's stamp ('#' and its doc's, holder-cache.ts), a few hundred per HMGET: the
    -- caller scores those it holds under that stamp and reads the rest (HMGETs). A
    -- candidate without words has no doc, so no stamp: its element and attributes come here.
    -- The stamped ones go out as "<id> <stamp>" lines in one string (reply[6]): thousands of
    -- candidates as three replies each cost more to build here and to parse there than the rest.
    local lines = {}
    for from = 1, #ids, 500 do
      local chunk = {unpack(ids, from, math.min(#ids, from + 499))}
      local docs = redis.call('HMGET', dbase .. 'docs', unpack(chunk))
      local bare, bareDocs = {}, {}
      for k, id in ipairs(chunk) do
        local doc = docs[k]
        local space = doc and string.byte(doc, 1) == 35 and string.find(doc, ' ', 2, true)
        if space then
          local n = #lines
          lines[n + 1] = id
          lines[n + 2] = ' '
          lines[n + 3] = string.sub(doc, 2, space - 1)
          lines[n + 4] = '\\n'
        else
          bare[#bare + 1] = id
          bareDocs[#bare] = doc
        end
      end
      if #bare > 0 then appendWhole(dbase, bare, bareDocs) end
    end
    reply[6] = table.concat(lines)
    -- The candidates are every product that can pass: the caller takes the query's lexical holders
    -- among them (by their words), since any other holder fails the filters.
    return reply
  end
  -- Answered by HNSW, though the candidates would answer a caller holding them: how many it would
  -- hold, which the caller's admission counts as scored (candidate-sets.ts).
  if holdable and guessed <= heldMost then reply[6] = guessed end
end
-- Filters the postings answer whole, passed by many: plain HNSW, asked for enough elements that
-- about the requested count pass (callers ask twice the hits they need when filtering); the caller
-- post-filters, and asks wider if too few pass.
local filter = ARGV[6]
local ask = count
local widen = ${COMMON_WORD_NEAREST}
if largeFrom and size > largeFrom then widen = ${COMMON_WORD_NEAREST_LARGE} end
-- The sets HNSW is asked: the whole one, or value sets (every element that can pass is in them).
local keys, among = vkeys or {KEYS[1]}, vsize or size
-- Value sets of which the rest of the filter passes few: plain HNSW would be asked deep and its
-- answer post-filtered (recall falls with the depth, and too few passing widen the ask); scanned
-- with the filter, they give the exact answer in one call, at a cost bounded by ARGV[15].
local scanFiltered = vkeys and not scanSets and estimate and estimate <= among * ${VALUE_SET_SCAN_SHARE} and among <= tonumber(ARGV[15])
if estimate and count > 0 and not scanFiltered then
  local wanted = math.ceil(count * among / math.max(estimate, 1))
  if wanted <= tonumber(ARGV[11]) then
    filter = ''
    ask = math.min(among, wanted)
    -- The count already holds twice the hits wanted: half the widening keeps a common word's
    -- margin over topK what it is unfiltered, at half the elements read (README "Filtered search").
    widen = widen / 2
  end
end
-- With a common word, more nearest elements: those that hold it are credited with their lexical
-- match, which may lift them above the first \`ask\` (README: "Lexical matching at scale"). Only
-- the first \`shown\` are hits; the rest only ever come back as holders.
local shown, beyond = ask, {}
if anyCommon then ask = math.ceil(ask * widen) end
-- HNSW's depth for keys[k]: SEARCH_EF, or over a value set, more the larger the set is.
local function efOf(k)
  local factor = 1
  if vsizes and vsizes[k] > ${VALUE_SET_EF_FROM} then
    factor = math.min(${VALUE_SET_EF_FACTOR}, 1 + (${VALUE_SET_EF_FACTOR} - 1) * math.log10(vsizes[k] / ${VALUE_SET_EF_FROM}))
  end
  return tostring(math.max(math.floor(tonumber(ARGV[5]) * factor + 0.5), ask))
end
if size > 0 and count > 0 then
  local efAt
  local args = {'VSIM', keys[1], 'FP32', ARGV[3], 'WITHSCORES', 'COUNT', tostring(ask)}
  if among <= tonumber(ARGV[2]) or scanSets or scanFiltered then
    args[#args + 1] = 'TRUTH'
  else
    reply[3] = 0
    args[#args + 1] = 'EF'
    args[#args + 1] = efOf(1)
    efAt = #args
  end
  if filter ~= '' then
    args[#args + 1] = 'FILTER'
    args[#args + 1] = filter
    args[#args + 1] = 'FILTER-EF'
    args[#args + 1] = ARGV[7]
  end
  local found = redis.call(unpack(args))
  if #keys > 1 then
    local lists = {found}
    for k = 2, #keys do
      args[2] = keys[k]
      if efAt then args[efAt] = efOf(k) end
      lists[k] = redis.call(unpack(args))
    end
    found = nearestOf(lists, ask)
  end
  for i = 1, #found, 2 do members[found[i]] = true end
  for i = 2 * shown + 1, #found, 2 do beyond[#beyond + 1] = found[i] end
  for i = #found, 2 * shown + 1, -1 do found[i] = nil end
  reply[4] = #found / 2
  -- Plain HNSW answering filters the postings decide: the hits that fail them are marked '!' in
  -- place of their attributes (they still bound what is unseen), and only the others' are read.
  local marking = judged and filter == ''
  if marking then
    for i = 1, #found, 2 do passed[found[i]] = passes(found[i]) end
  end
  local function fails(id) return marking and not passed[id] end
  -- A build with postings keeps every element's attributes in a hash too: one HMGET instead of a
  -- VGETATTR (5 us) per hit.
  local attrs = {}
  if meta[3] and meta[3] == meta[2] then
    local ids = {}
    for i = 1, #found, 2 do
      if not fails(found[i]) then ids[#ids + 1] = found[i] end
    end
    for from = 1, #ids, 1000 do
      for _, a in ipairs(redis.call('HMGET', KEYS[3] .. meta[3] .. ':attr', unpack(ids, from, math.min(#ids, from + 999)))) do attrs[#attrs + 1] = a end
    end
  end
  local read = 0
  for i = 1, #found, 2 do
    reply[#reply + 1] = found[i]
    reply[#reply + 1] = found[i + 1]
    if fails(found[i]) then
      reply[#reply + 1] = '!'
    else
      read = read + 1
      reply[#reply + 1] = attrs[read] or redis.call('VGETATTR', KEYS[1], found[i]) or ''
    end
  end
end
if not base then return reply end
local holders, stamps, seen, common = {}, {}, {}, {}
local function hold(id, stamp)
  if not seen[id] then
    seen[id] = true
    if judged and not passed[id] and not passes(id) then return end
    holders[#holders + 1] = id
    stamps[#holders] = stamp
  end
end
for i = at + 6, #ARGV do
  local key = base .. 'w:' .. ARGV[i]
  local n = lens[i]
  if n > most and (not hashed or n > ${RANKED_FROM}) then
    common[#common + 1] = ARGV[i]
  elseif hashed then
    local entries = redis.call('HGETALL', key)
    for j = 1, #entries, 2 do hold(entries[j], entries[j + 1]) end
  else
    for _, id in ipairs(redis.call('SMEMBERS', key)) do hold(id, nil) end
  end
end
-- A common word (held by more than \`most\` products, and than RANKED_FROM, so its holders are
-- ranked): its \`ranked\` first holders (holderOrder) while the query's common words, taken in the
-- caller's order, have given fewer than \`budget\`, and the nearest elements above that hold it,
-- so that every product returned is scored in full (README: "Lexical matching at scale").
local more = 0
if hashed and #common > 0 then
  local taken, needles = 0, {}
  for _, word in ipairs(common) do
    -- Looked for in the nearest elements' docs (holdersAmong, below).
    needles[#needles + 1] = ' ' .. word .. ' '
    if taken >= budget then
      more = 1
    else
      local ids = redis.call('ZRANGE', base .. 'r:' .. word, 0, math.min(ranked, budget - taken) - 1)
      if #ids == ranked or taken + #ids >= budget then more = 1 end
      -- The mark of a set that keeps only the word's first holders (lexical-script.ts).
      if ids[#ids] == '' then
        ids[#ids] = nil
        more = 1
      end
      taken = taken + #ids
      if #ids > 0 then
        local found = redis.call('HMGET', base .. 'w:' .. word, unpack(ids))
        for k, id in ipairs(ids) do
          if found[k] then hold(id, found[k]) end
        end
      end
    end
  end
  -- The nearest elements' words, a few hundred per HMGET: one call whatever the number of common words.
  local nearest = {}
  for k = 8, #reply, 3 do nearest[#nearest + 1] = reply[k] end
  for _, id in ipairs(beyond) do nearest[#nearest + 1] = id end
  holdersAmong(base .. 'docs', nearest, needles, seen, hold)
end
-- Each holder as "<id> <stamp>" (ids hold no spaces; the stamp is "" in builds written before
-- stamps), one line each: the caller has most holders already (holder-cache.ts) and reads the rest
-- with HOLDERS_SCRIPT.
-- A holder whose element is gone (lost behind the service's back: the service's own removals take
-- the words out first) is not searchable.
local lines = {}
if hashed then
  for k, id in ipairs(holders) do
    if members[id] or redis.call('VISMEMBER', KEYS[1], id) == 1 then lines[#lines + 1] = id .. ' ' .. stamps[k] end
  end
end
for from = 1, hashed and 0 or #holders, 500 do
  local chunk = {unpack(holders, from, math.min(#holders, from + 499))}
  local docs = redis.call('HMGET', base .. 'docs', unpack(chunk))
  for k, id in ipairs(chunk) do
    local doc = docs[k]
    if doc and redis.call('VISMEMBER', KEYS[1], id) == 1 then lines[#lines + 1] = id .. ' ' .. (string.match(doc, '^#(%S+)') or '') end
  end
end
reply[#reply + 1] = more
reply[#reply + 1] = table.concat(lines, '\\n')
-- The common words whose holders among the nearest elements were looked for (above): a caller that
-- finds the nearest elements itself (threaded-nearest.ts) looks for them there (NEAREST_SCRIPT).
reply[#reply + 1] = hashed and table.concat(common, '\\n') or ''
return reply
`;
