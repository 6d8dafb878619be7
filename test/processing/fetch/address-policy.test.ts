import { describe, expect, it } from "vitest";
import { isPublicAddress, nonPublicReason, parseIPv6 } from "../../../src/processing/fetch/address-policy.js";

describe("nonPublicReason: IPv4", () => {
  it.each([
    ["0.0.0.0", "unspecified"],
    ["0.255.255.255", "unspecified"],
    ["10.0.0.0", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.0", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.0.1", "link-local"],
    ["169.254.169.254", "link-local"], // cloud metadata
    ["172.16.0.0", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.1", "reserved"],
    ["192.0.0.255", "reserved"],
    ["192.0.2.10", "documentation"],
    ["192.88.99.1", "reserved"],
    ["192.168.0.1", "private"],
    ["192.168.255.255", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.255", "multicast"],
    ["240.0.0.1", "reserved"],
    ["254.255.255.255", "reserved"],
    ["255.255.255.255", "broadcast"],
  ])("refuses %s (%s)", (address, reason) => {
    expect(nonPublicReason(address)).toBe(reason);
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    "1.1.1.1",
    "8.8.8.8",
    "9.255.255.255", // just below 10/8
    "11.0.0.0", // just above 10/8
    "100.63.255.255", // just below 100.64/10
    "100.128.0.0", // just above 100.64/10
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255", // just below 172.16/12
    "172.32.0.0", // just above 172.16/12
    "192.0.1.0",
    "192.0.3.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255", // just below multicast
    "93.184.216.34",
  ])("allows public %s", (address) => {
    expect(nonPublicReason(address)).toBeNull();
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe("nonPublicReason: IPv6", () => {
  it.each([
    ["::", "unspecified"],
    ["0:0:0:0:0:0:0:0", "unspecified"],
    ["::1", "loopback"],
    ["0000:0000:0000:0000:0000:0000:0000:0001", "loopback"],
    ["fc00::1", "private"],
    ["fd12:3456:789a::1", "private"],
    ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fec0::1", "reserved"], // deprecated site-local
    ["ff02::1", "multicast"],
    ["ff05::1:3", "multicast"],
    // IPv4-mapped: judged as the IPv4 address, in both textual forms.
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::FFFF:10.1.2.3", "private"],
    ["::ffff:169.254.169.254", "link-local"],
    ["0:0:0:0:0:ffff:c0a8:0101", "private"],
    // IPv4-compatible (deprecated).
    ["::127.0.0.1", "reserved"],
    ["::8.8.8.8", "reserved"],
    // NAT64: judged as the embedded IPv4 address.
    ["64:ff9b::127.0.0.1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b:1::1", "private"],
    // 6to4 embeds an IPv4 address too.
    ["2002:7f00:1::1", "loopback"],
    ["2002:c0a8:101::1", "private"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["2001::1", "reserved"], // Teredo
    ["2001:2::1", "reserved"], // benchmarking
    ["100::1", "reserved"], // discard-only
    ["1234::1", "reserved"], // outside global unicast
    ["4000::1", "reserved"],
    ["[::1]", "loopback"],
  ])("refuses %s (%s)", (address, reason) => {
    expect(nonPublicReason(address)).toBe(reason);
  });

  it.each([
    "2606:4700:4700::1111",
    "2a00:1450:4001:82b::200e",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "::ffff:808:808",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
    "2001:200::1", // just past 2001::/23
    "3fff:1000::1", // just past 3fff::/20
  ])("allows public %s", (address) => {
    expect(nonPublicReason(address)).toBeNull();
  });
});

describe("nonPublicReason: not addresses", () => {
  it.each(["", "localhost", "example.com", "127.0.0.1.nip.io", "256.0.0.1", "010.0.0.1", "1.2.3", "::g", "1:2:3:4:5:6:7:8:9"])(
    "refuses %j",
    (text) => {
      expect(nonPublicReason(text)).toBe("not an IP address");
    },
  );
});

describe("parseIPv6", () => {
  it.each([
    ["::", [0, 0, 0, 0, 0, 0, 0, 0]],
    ["1::", [1, 0, 0, 0, 0, 0, 0, 0]],
    ["::2", [0, 0, 0, 0, 0, 0, 0, 2]],
    ["1:2:3:4:5:6:7:8", [1, 2, 3, 4, 5, 6, 7, 8]],
    ["1::8", [1, 0, 0, 0, 0, 0, 0, 8]],
    ["1:2::7:8", [1, 2, 0, 0, 0, 0, 7, 8]],
    ["::ffff:1.2.3.4", [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]],
    ["1:2:3:4:5:6:1.2.3.4", [1, 2, 3, 4, 5, 6, 0x0102, 0x0304]],
    ["1::1.2.3.4", [1, 0, 0, 0, 0, 0, 0x0102, 0x0304]],
    ["::1.2.3.4", [0, 0, 0, 0, 0, 0, 0x0102, 0x0304]],
    ["FE80::ABCD%25eth0", [0xfe80, 0, 0, 0, 0, 0, 0, 0xabcd]],
  ])("expands %s", (text, groups) => {
    expect(parseIPv6(text)).toEqual(groups);
  });
});
