import { isIPv4, isIPv6 } from "node:net";

/**
 * Decides whether an IP address is on the public internet. Customer-supplied URLs must never
 * make the service talk to itself, its neighbours or cloud metadata endpoints (SSRF), so
 * anything not plainly public is refused. Pure: no DNS, no I/O.
 */

type Range = readonly [base: number, prefixLength: number, reason: string];

const IPV4_NON_PUBLIC: readonly Range[] = [
  [ipv4("0.0.0.0"), 8, "unspecified"],
  [ipv4("10.0.0.0"), 8, "private"],
  [ipv4("100.64.0.0"), 10, "carrier-grade NAT"],
  [ipv4("127.0.0.0"), 8, "loopback"],
  [ipv4("169.254.0.0"), 16, "link-local"],
  [ipv4("172.16.0.0"), 12, "private"],
  [ipv4("192.0.0.0"), 24, "reserved"],
  [ipv4("192.0.2.0"), 24, "documentation"],
  [ipv4("192.88.99.0"), 24, "reserved"],
  [ipv4("192.168.0.0"), 16, "private"],
  [ipv4("198.18.0.0"), 15, "benchmarking"],
  [ipv4("198.51.100.0"), 24, "documentation"],
  [ipv4("203.0.113.0"), 24, "documentation"],
  [ipv4("224.0.0.0"), 4, "multicast"],
  [ipv4("255.255.255.255"), 32, "broadcast"],
  [ipv4("240.0.0.0"), 4, "reserved"],
];

/**
 * Why the address may not be fetched from ("loopback", "private", ...), or null when it is
 * public. Text that is not an IP address is refused too: only validated addresses get through.
 */
export function nonPublicReason(address: string): string | null {
  if (isIPv4(address)) return ipv4Reason(ipv4(address));
  const groups = parseIPv6(address);
  if (groups === null) return "not an IP address";
  return ipv6Reason(groups);
}

export const isPublicAddress = (address: string): boolean => nonPublicReason(address) === null;

function ipv4Reason(value: number): string | null {
  for (const [base, prefixLength, reason] of IPV4_NON_PUBLIC) {
    if (inPrefix(value, base, prefixLength)) return reason;
  }
  return null;
}

function inPrefix(value: number, base: number, prefixLength: number): boolean {
  const mask = prefixLength === 0 ? 0 : (0xffffffff << (32 - prefixLength)) >>> 0;
  return ((value & mask) >>> 0) === ((base & mask) >>> 0);
}

function ipv6Reason(g: readonly number[]): string | null {
  const at = (i: number) => g[i] ?? 0;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  const embeddedV4 = (high: number, low: number) => ((high << 16) | low) >>> 0;

  if (zeroUpTo(7) && at(7) === 0) return "unspecified";
  if (zeroUpTo(7) && at(7) === 1) return "loopback";
  // ::ffff:a.b.c.d reaches the IPv4 host a.b.c.d, so it is exactly as safe as that host.
  if (zeroUpTo(5) && at(5) === 0xffff) return ipv4Reason(embeddedV4(at(6), at(7)));
  // Deprecated IPv4-compatible form (::a.b.c.d); nothing legitimate uses it any more.
  if (zeroUpTo(6)) return "reserved";
  // NAT64 (64:ff9b::/96) translates to the embedded IPv4 host.
  if (at(0) === 0x64 && at(1) === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return ipv4Reason(embeddedV4(at(6), at(7)));
  }
  if (at(0) === 0x64 && at(1) === 0xff9b && at(2) === 1) return "private"; // local-use NAT64, 64:ff9b:1::/48
  // 6to4 (2002::/16) tunnels to the IPv4 host in bits 16..48.
  if (at(0) === 0x2002) return ipv4Reason(embeddedV4(at(1), at(2)));

  const first = at(0);
  if ((first & 0xfe00) === 0xfc00) return "private"; // unique local, fc00::/7
  if ((first & 0xffc0) === 0xfe80) return "link-local";
  if ((first & 0xff00) === 0xff00) return "multicast";
  // Only global unicast (2000::/3) is routed on the internet; the rest is reserved or special.
  if ((first & 0xe000) !== 0x2000) return "reserved";
  if (first === 0x2001 && at(1) === 0x0db8) return "documentation";
  if (first === 0x3fff && at(1) <= 0x0fff) return "documentation"; // 3fff::/20
  // 2001::/23: IETF protocol assignments (Teredo, benchmarking, ORCHID...), never image hosts.
  if (first === 0x2001 && at(1) < 0x0200) return "reserved";
  return null;
}

function ipv4(text: string): number {
  const parts = text.split(".").map(Number);
  return (((parts[0] ?? 0) << 24) | ((parts[1] ?? 0) << 16) | ((parts[2] ?? 0) << 8) | (parts[3] ?? 0)) >>> 0;
}

/** Expands an IPv6 address (any textual form, with or without zone or brackets) to 8 groups. */
export function parseIPv6(text: string): number[] | null {
  let address = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = address.indexOf("%");
  if (zone !== -1) address = address.slice(0, zone);
  if (!isIPv6(address)) return null;

  let tail: number[] = [];
  const lastColon = address.lastIndexOf(":");
  const last = address.slice(lastColon + 1);
  if (last.includes(".")) {
    const v4 = ipv4(last);
    tail = [v4 >>> 16, v4 & 0xffff];
    address = address.slice(0, lastColon + 1);
    if (!address.endsWith("::")) address = address.slice(0, -1);
  }

  const hex = (part: string) => (part === "" ? [] : part.split(":").map((h) => parseInt(h, 16)));
  const halves = address.split("::");
  let groups: number[];
  if (halves.length === 2) {
    const left = hex(halves[0] ?? "");
    const right = hex(halves[1] ?? "");
    const missing = 8 - tail.length - left.length - right.length;
    groups = [...left, ...new Array<number>(missing).fill(0), ...right];
  } else {
    groups = hex(address);
  }
  groups.push(...tail);
  return groups.length === 8 ? groups : null;
}
