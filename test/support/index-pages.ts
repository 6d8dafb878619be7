// Index entries as a rebuild takes them: pages of `size`, as the service reads them from MySQL.
import type { IndexEntry } from "../../src/search/index.js";

export async function* pages(list: readonly IndexEntry[], size = 500): AsyncGenerator<IndexEntry[]> {
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size);
}
