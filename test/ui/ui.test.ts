// The web page in a real browser (Debian's Chromium driven by playwright-core) against the real
// service: real photos fetched and embedded by the real worker, then searched from the page.
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheDir } from "../support/cache-dir.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { restClient } from "../support/rest-client.js";
import { samplePhotos } from "../support/sample-photos.js";
import type { SamplePhotoName } from "../support/sample-photos.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// Without the background-networking flags Chromium keeps dialling Google's hosts, which this
// machine's closed network refuses (see the machine notes); never a browser download.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const OUTPUT_DIR = "test-output";
const SCREENSHOT = join(OUTPUT_DIR, "ui-search.png");

const PRODUCTS: [string, SamplePhotoName, string, Record<string, unknown>][] = [
  ["moto-l", "motorcycle_left", "red motorcycle, left view", { kind: "moto", colour: "red", price: 8900 }],
  ["moto-r", "motorcycle_right", "red motorcycle, right view", { kind: "moto", colour: "red", price: 9100 }],
  ["cat", "chelsea", "tabby cat", { kind: "animal", colour: "brown" }],
  ["coffee", "coffee", "cup of coffee", { kind: "drink", colour: "brown", price: 3 }],
  ["rocket", "rocket", "rocket on the launch pad", { kind: "space", colour: "white" }],
  ["astronaut", "astronaut", "astronaut portrait", { kind: "space", colour: "white" }],
];

let server: TestServer;
let images: ImageServer;
let launching: Promise<Browser> | undefined;
let browser: Browser;
let key: string;
let catalogId: string;
const org = randomUUID();

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's Chromium (apt-get install chromium), as .ci/run does`);
  }
  launching = chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const photos = await samplePhotos(cacheDir);
  images = await startImageServer();
  for (const [, photo] of PRODUCTS) images.route(`/${photo}`, serveBytes(photos[photo], "image/png"));
  server = await startTestServer({ WORKERS: "1", CACHE_DIR: cacheDir, IMAGE_FETCH_ALLOW_PRIVATE: "true", PROCESSING_IDLE_POLL_MS: "100" });
  key = await server.createKey(org, ["read", "search"]);
  const admin = restClient(server.restUrl, server.adminKey);
  catalogId = (await admin.post(`/organizations/${org}/catalogs`, { name: "Sample photos", description: "scikit-image sample data" })).body.id;
  const created = await admin.post(
    `/organizations/${org}/catalogs/${catalogId}/products`,
    PRODUCTS.map(([id, photo, descriptor, metadata]) => ({ id, catalogId, imageUrl: images.url(`/${photo}`), descriptor, metadata })),
  );
  expect(created.status).toBe(202);
  browser = await launching;
  await server.app.workers.ready;
  await waitFor(
    async () => {
      const progress = (await admin.get(`/organizations/${org}/catalogs/${catalogId}/progress`)).body;
      return progress.status === "PROCESSED" && progress.processed === PRODUCTS.length;
    },
    90_000,
    "the worker to process the sample photos",
  );
}, 150_000);

afterAll(async () => {
  await (await launching?.catch(() => undefined))?.close();
  await server?.close();
  await images?.close();
});

describe("the /ui route", () => {
  it("serves the page's files with their types and nothing else", async () => {
    const page = await fetch(`${server.restUrl}/ui`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script type="module" src="/ui/app.js">');
    const script = await fetch(`${server.restUrl}/ui/app.js`);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await fetch(`${server.restUrl}/ui/style.css`)).headers.get("content-type")).toBe("text/css; charset=utf-8");
    for (const path of ["/ui/nothing.js", "/ui/..%2Fpackage.json", "/ui/%2e%2e%2fpackage.json", "/ui/.hidden.js", "/ui/index"]) {
      const response = await fetch(`${server.restUrl}${path}`);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { message: string }).message).toBe("no such file");
    }
  });
});

describe("the web page", () => {
  it("finds, filters and recommends products from real photos", { timeout: 90_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 1000 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("response", (response) => {
      if (response.status() >= 400 && response.status() !== 401) problems.push(`${response.status()} ${response.url()}`);
    });
    page.on("console", (message) => {
      // Failed requests are logged by the browser itself: the response handler above judges those.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) problems.push(`console: ${message.text()}`);
    });
    try {
      await page.goto(`${server.restUrl}/ui`);
      await expect(page.title()).resolves.toBe("Vitrine");

      // A wrong key: the Error object's message is shown.
      await page.fill("#org", org);
      await page.fill("#key", "vtr_wrong");
      await page.click("#connect button[type=submit]");
      await page.waitForSelector('#message[data-kind="error"]');
      expect(await page.textContent("#message")).toBe("invalid API key");

      // The right key: the catalogs, the chosen one's status and progress.
      await page.fill("#key", key);
      await page.click("#connect button[type=submit]");
      await page.waitForSelector(`#catalog option[value="${catalogId}"]`, { state: "attached" });
      await page.selectOption("#catalog", catalogId);
      await expect.poll(() => page.textContent("#catalog-status"), { timeout: 10_000 }).toBe("PROCESSED");
      // The progress answer follows the catalog list's.
      await expect.poll(() => page.getAttribute("#progress-bar", "aria-valuenow")).toBe("100");
      expect(await page.textContent("#catalog-count")).toBe(String(PRODUCTS.length));
      expect(await page.textContent("#count-processed")).toBe(String(PRODUCTS.length));

      // The organization is remembered; the key lives in this tab's session storage only.
      expect(await page.evaluate("localStorage.getItem('vitrine.organizationId')")).toBe(org);
      expect(await page.evaluate("JSON.stringify(localStorage).includes('vtr_')")).toBe(false);
      expect(await page.evaluate("sessionStorage.getItem('vitrine.apiKey')")).toBe(key);

      // Search: real images from each product's objectUrl, the motorcycles first.
      await page.fill("#query", "motorcycle");
      await page.click("#search-button");
      const first = await resultsLoaded(page, "#results");
      expect(first.length).toBeGreaterThanOrEqual(2);
      expect(first.slice(0, 2).map((r) => r.id).sort()).toEqual(["moto-l", "moto-r"]);
      expect(first.map((r) => r.rank)).toEqual(first.map((_, i) => `#${i + 1}`));
      for (const result of first) expect(result.score).toMatch(/^-?\d\.\d{3}$/);
      const motoCard = page.locator('#results .card[data-product-id="moto-l"]');
      await expect(motoCard.locator(".descriptor").textContent()).resolves.toBe("red motorcycle, left view");
      expect(first.find((r) => r.id === "moto-l")?.kind).toBe("moto");
      await expect(motoCard.locator(".metadata dd").allTextContents()).resolves.toEqual(["moto", "red", "8900", "NO_BOOST"]);

      // A product's recommendations, never itself; the other view of the same motorcycle first.
      await motoCard.locator("button.open").click();
      await page.waitForSelector("#recs-panel:not([hidden])");
      const recs = await resultsLoaded(page, "#recs");
      expect(recs.map((r) => r.id)).not.toContain("moto-l");
      expect(recs.length).toBe(PRODUCTS.length - 1);
      expect(recs[0]!.id).toBe("moto-r");
      expect(await page.textContent("#recs-heading")).toBe("Similar to moto-l");
      mkdirSync(OUTPUT_DIR, { recursive: true });
      await page.mouse.move(0, 0);
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      // ... and clickable again.
      await page.locator('#recs .card[data-product-id="moto-r"] button.open').click();
      await expect.poll(() => page.textContent("#recs-heading")).toBe("Similar to moto-r");
      expect((await resultsLoaded(page, "#recs")).map((r) => r.id)).not.toContain("moto-r");

      // The visual-weight slider, moved by keyboard to its minimum: the search runs again with it.
      await page.focus("#visual-weight");
      await page.keyboard.press("Home");
      expect(await page.textContent("#visual-weight-value")).toBe("0.05");
      await expect.poll(() => page.textContent("#results-summary")).toContain("visual weight 0.05");
      const textOnly = await resultsLoaded(page, "#results");
      expect(textOnly.slice(0, 2).map((r) => r.id).sort()).toEqual(["moto-l", "moto-r"]);
      expect(textOnly.map((r) => r.score)).not.toEqual(first.map((r) => r.score));

      // A filter, kind ne moto: the motorcycles leave the grid, the others stay.
      await page.click("#add-filter");
      await page.fill("#filter-rows .filter-row .f-field", "kind");
      await page.selectOption("#filter-rows .filter-row .f-op", "ne");
      await page.fill("#filter-rows .filter-row .f-value", "moto");
      await page.press("#filter-rows .filter-row .f-value", "Enter");
      await expect.poll(() => page.textContent("#results-summary")).toContain("1 filter");
      const filtered = await resultsLoaded(page, "#results");
      expect(filtered.length).toBeGreaterThan(0);
      for (const card of filtered) expect(card.kind).not.toBe("moto");

      // in, split on commas: only those kinds.
      await page.selectOption("#filter-rows .filter-row .f-op", "in");
      await page.fill("#filter-rows .filter-row .f-value", "space, drink");
      await page.click("#search-button");
      await expect.poll(async () => (await resultsLoaded(page, "#results")).map((r) => r.kind)).not.toContain("animal");
      const chosen = await resultsLoaded(page, "#results");
      expect(chosen.length).toBeGreaterThan(0);
      for (const card of chosen) expect(["space", "drink"]).toContain(card.kind);

      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

interface Card {
  id: string;
  rank: string;
  score: string;
  /** The metadata field `kind` as the card shows it. */
  kind: string;
}

/**
 * Waits until the grid has settled and every card shows its real image (decoded, naturalWidth > 0:
 * loaded from the product's objectUrl), then reads the cards in order. (Browser code as strings:
 * the project compiles without the DOM library.)
 */
async function resultsLoaded(page: Page, grid: string): Promise<Card[]> {
  const root = `document.querySelector(${JSON.stringify(grid)})`;
  // Polled with page.evaluate: waitForFunction's string form evals inside the page, which the
  // page's own Content-Security-Policy forbids.
  const settled = `(() => { const root = ${root}; const imgs = [...(root?.querySelectorAll(".card img") ?? [])];
    return root?.getAttribute("aria-busy") === null && imgs.length > 0 && imgs.every((img) => img.complete && img.naturalWidth > 0); })()`;
  await expect.poll(() => page.evaluate<boolean>(settled), { timeout: 20_000, interval: 100 }).toBe(true);
  return page.evaluate<Card[]>(`[...${root}.querySelectorAll(".card")].map((card) => ({
    id: card.getAttribute("data-product-id") ?? "",
    rank: card.querySelector(".rank [aria-hidden]")?.textContent ?? "",
    score: card.querySelector(".score b")?.textContent ?? "",
    kind: [...card.querySelectorAll(".metadata div")].find((d) => d.querySelector("dt")?.textContent === "kind")?.querySelector("dd")?.textContent ?? "",
  }))`);
}
