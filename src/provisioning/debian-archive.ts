// Finds the Debian archive this machine already uses, so the trixie fetch goes through the same
// mirror or caching proxy (machines here reach no other host) instead of a hardcoded one.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

export interface AptSourceEntry {
  uri: string;
  suites: string[];
  components: string[];
  file: string;
}

// One-line format: "deb [opts] uri suite [components...]".
function parseOneLine(text: string, file: string): AptSourceEntry[] {
  const entries: AptSourceEntry[] = [];
  for (const rawLine of text.split("\n")) {
    const line = rawLine.replace(/#.*/, "").trim();
    if (!line.startsWith("deb ") && !line.startsWith("deb\t")) continue;
    const rest = line.slice(3).trim().replace(/^\[[^\]]*\]\s*/, "");
    const [uri, suite, ...components] = rest.split(/\s+/);
    if (uri && suite) entries.push({ uri, suites: [suite], components, file });
  }
  return entries;
}

// deb822 format: blank-line separated stanzas of "Key: value" fields.
function parseDeb822(text: string, file: string): AptSourceEntry[] {
  const entries: AptSourceEntry[] = [];
  const lines = text.split("\n").filter((l) => !l.trimStart().startsWith("#"));
  for (const stanza of lines.join("\n").split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let lastKey: string | undefined;
    for (const line of stanza.split("\n")) {
      const continuation = /^\s+\S/.test(line);
      if (continuation && lastKey) {
        fields.set(lastKey, `${fields.get(lastKey) ?? ""} ${line.trim()}`);
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
      if (m?.[1]) {
        lastKey = m[1].toLowerCase();
        fields.set(lastKey, m[2] ?? "");
      }
    }
    if (fields.get("enabled")?.trim().toLowerCase() === "no") continue;
    if (!(fields.get("types") ?? "").split(/\s+/).includes("deb")) continue;
    const suites = (fields.get("suites") ?? "").split(/\s+/).filter(Boolean);
    const components = (fields.get("components") ?? "").split(/\s+/).filter(Boolean);
    for (const uri of (fields.get("uris") ?? "").split(/\s+/).filter(Boolean)) {
      entries.push({ uri, suites, components, file });
    }
  }
  return entries;
}

export async function readAptSources(etcApt = "/etc/apt"): Promise<AptSourceEntry[]> {
  const files: string[] = [];
  const partsDir = path.join(etcApt, "sources.list.d");
  try {
    // apt itself only reads these two extensions; "*.disabled" and friends must be ignored too.
    for (const name of (await readdir(partsDir)).sort()) {
      if (name.endsWith(".list") || name.endsWith(".sources")) files.push(path.join(partsDir, name));
    }
  } catch {
    // No parts directory: the main sources.list may still name an archive.
  }
  files.push(path.join(etcApt, "sources.list"));
  const entries: AptSourceEntry[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch {
      continue;
    }
    entries.push(...(file.endsWith(".sources") ? parseDeb822(text, file) : parseOneLine(text, file)));
  }
  return entries;
}

// The main archive (not debian-security, not a third-party repo) is the one whose URI path ends in
// "/debian": that holds for deb.debian.org, country mirrors and apt-cacher style proxies alike.
// Requiring the "main" component keeps out third-party repos laid out the same way
// (download.docker.com/linux/debian ships "stable").
export function pickDebianArchive(entries: readonly AptSourceEntry[]): string | undefined {
  const candidates = entries.filter((e) => {
    let url: URL;
    try {
      url = new URL(e.uri);
    } catch {
      return false;
    }
    return (
      (url.protocol === "http:" || url.protocol === "https:") &&
      /\/debian\/?$/.test(url.pathname) &&
      e.components.includes("main")
    );
  });
  const best = candidates[0];
  return best ? best.uri.replace(/\/+$/, "") : undefined;
}

export async function findDebianArchive(etcApt = "/etc/apt"): Promise<string> {
  const entries = await readAptSources(etcApt);
  const archive = pickDebianArchive(entries);
  if (!archive) {
    const seen = entries.map((e) => e.uri).join(", ") || "none";
    throw new Error(
      `cannot fetch Redis 8: no Debian archive (an http(s) URI ending in /debian, component main) found in ${etcApt}/sources.list.d/*.sources, ` +
        `*.list or ${etcApt}/sources.list (URIs seen: ${seen}). Add the Debian archive to apt's sources, ` +
        `or set REDIS_URL to a Redis >= 8 server.`,
    );
  }
  return archive;
}
