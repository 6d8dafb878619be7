// Which filters' candidate sets the service holds (src/storage/redis/candidate-sets.ts), replayed
// over sequences of filters asked: no Redis, no service, just the cache's own decisions in the order
// slot-index.ts takes them (held? else admitted? then stored, then noted). Each ask is tallied as
// held (one GET and a dot product per candidate), read and kept (a read, and a set stored: garbage
// if it is pushed out before it pays back), or not held (read whole or answered by HNSW).
//
//   npx tsx bench/candidate-admission.ts [--capacity 50000] [--n 100000] [--held-up-to 12000]
//
// --held-up-to: the largest set the query script reads to hold (slot-index.ts's
// EXACT_CANDIDATES_HELD); a larger one is asked again and again, never stored.
//
// Sequences, each after the one before through the same cache (as traffic comes):
//   bench rows    bench/search.ts --filters' nine rows at --n, 660 asks each (REST at 1 and 8
//                 clients: 30 warm-up and 300 queries each), their sizes as the catalog's shares;
//   Zipf          20,000 asks of 2,000 filters of 100-5,000 candidates, popularity by rank^-0.9,
//                 then 20,000 more with the popular ones moved along by 500;
//   in turn       filters asked in turn past the capacity, turns after each other.
import { parseArgs } from "node:util";
import { CandidateSets } from "../src/storage/redis/candidate-sets.js";
import { HeldCandidates } from "../src/storage/redis/held-candidates.js";
import { seededRandom } from "../test/support/random.js";

const { values } = parseArgs({
  options: { capacity: { type: "string", default: "50000" }, n: { type: "string", default: "100000" }, "held-up-to": { type: "string", default: "12000" } },
});
const CAPACITY = Number(values.capacity);
const N = Number(values.n);
const HELD_UP_TO = Number(values["held-up-to"]);

/** A filter: its posting groups (one per field; values of an `in` together) and candidates. */
interface Filter {
  groups: string[][];
  size: number;
}

type Row = readonly [label: string, asks: readonly Filter[]];

/** bench/search.ts's REST runs of one row: 30 warm-up and 300 queries, at 1 client and at 8. */
function benchAsks(filters: readonly Filter[]): Filter[] {
  const order = [...Array(30).keys(), ...Array(300).keys()];
  return [...order, ...order].map((q) => filters[q % filters.length]!);
}

const one = (value: string, share: number): Filter => ({ groups: [[value]], size: Math.round(N * share) });
const inTurn = (count: number, make: (v: number) => Filter) => Array.from({ length: count }, (_, v) => make(v));

const benchRows: Row[] = [
  ["10% (section)", benchAsks([one("s3", 0.1)])],
  ["10% (section, 10 in turn)", benchAsks(inTurn(10, (v) => one(`s${v}`, 0.1)))],
  ["1% (shop)", benchAsks([one("h42", 0.01)])],
  ["1% (shop, 100 in turn)", benchAsks(inTurn(100, (v) => one(`h${v}`, 0.01)))],
  ["20% (section in 2, 5 in turn)", benchAsks(inTurn(5, (v) => ({ groups: [[`s${v}`, `s${v + 5}`]], size: N * 0.2 })))],
  ["2% (shop in 2, 50 in turn)", benchAsks(inTurn(50, (v) => ({ groups: [[`h${v}`, `h${v + 50}`]], size: N * 0.02 })))],
  ["0.1% (line)", benchAsks([one("l777", 0.001)])],
  ["1% (section and finish)", benchAsks([{ groups: [["s3"], ["f5"]], size: N * 0.01 }])],
  ["1% (section and finish, 10 in turn)", benchAsks(inTurn(10, (v) => ({ groups: [[`s${v}`], [`f${(v + 3) % 10}`]], size: N * 0.01 })))],
];

function zipfRows(): Row[] {
  const random = seededRandom(20261127);
  const FILTERS = 2000;
  const sizes = Array.from({ length: FILTERS }, () => Math.round(100 + random() * 4900));
  let sum = 0;
  const cumulative = Array.from({ length: FILTERS }, (_, k) => (sum += (k + 1) ** -0.9));
  const total = cumulative[FILTERS - 1]!;
  const rank = () => {
    const r = random() * total;
    let lo = 0;
    for (let hi = FILTERS - 1; lo < hi; ) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < r) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const asks = (shift: number) => Array.from({ length: 20_000 }, () => {
    const k = (rank() + shift) % FILTERS;
    return { groups: [[`z${k}`]], size: sizes[k]! };
  });
  return [["Zipf", asks(0)], ["Zipf, popularity moved", asks(500)]];
}

const turnRows: Row[] = [
  [200, 1000],
  [1000, 1000],
  [1000, 100],
  [3000, 100],
].map(([count, size]) => {
  const filters = inTurn(count!, (v) => ({ groups: [[`t${count}x${size}v${v}`]], size: size! }));
  return [`${count} of ${size} in turn, 10 turns`, Array.from({ length: 10 * count! }, (_, q) => filters[q % count!]!)] as const;
});

const setsOfSize = new Map<number, HeldCandidates>();
function candidates(size: number): HeldCandidates {
  let set = setsOfSize.get(size);
  if (!set) {
    set = new HeldCandidates(Array.from({ length: size }, (_, i) => ({ productId: `p${i}`, element: new Float32Array(1), attributes: {}, words: [] })));
    setsOfSize.set(size, set);
  }
  return set;
}

function replay(label: string, rows: readonly Row[]): void {
  console.log(`\n${label} (capacity ${CAPACITY.toLocaleString("en-US")} candidates)`);
  console.log(`  ${"row".padEnd(40)}${"asks".padStart(8)}${"held".padStart(9)}${"read, kept".padStart(12)}${"not held".padStart(10)}`);
  const sets = new CandidateSets(CAPACITY);
  for (const [row, asks] of rows) {
    let held = 0;
    let kept = 0;
    for (const { groups, size } of asks) {
      if (sets.get("c", groups)) held++;
      else if (size <= HELD_UP_TO && sets.admits("c", groups)) {
        sets.set("c", groups, { generation: "1", candidates: candidates(size) });
        kept++;
      }
      sets.noteAsked("c", groups, size, true);
    }
    const pct = (n: number) => `${((100 * n) / asks.length).toFixed(1)}%`;
    console.log(`  ${row.padEnd(40)}${String(asks.length).padStart(8)}${pct(held).padStart(9)}${pct(kept).padStart(12)}${pct(asks.length - held - kept).padStart(10)}`);
  }
}

replay(`bench/search.ts --filters rows at ${N.toLocaleString("en-US")}`, benchRows);
replay("Zipf traffic, then its popular filters moved", zipfRows());
replay("filters asked in turn past the capacity", turnRows);
