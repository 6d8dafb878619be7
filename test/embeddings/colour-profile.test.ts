import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { COLOUR_NAMES, colourProfile } from "../../src/embeddings/index.js";
import { samplePhotos } from "../support/sample-photos.js";
import { cacheDir } from "../support/cache-dir.js";

const share = (h: Float32Array, name: (typeof COLOUR_NAMES)[number]) => h[COLOUR_NAMES.indexOf(name)]!;
const sum = (h: Float32Array) => h.reduce((a, b) => a + b, 0);

function svgOnBackground(shape: string, background: string, size = 240): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">` +
    `<rect width="100%" height="100%" fill="${background}"/>${shape}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

// A T-shirt silhouette with a soft shadow, as a catalog photo of a navy shirt would be.
const SHIRT = `<path d="M80 30 L100 20 Q120 35 140 20 L160 30 L210 70 L185 100 L165 85 L165 220 L75 220 L75 85 L55 100 L30 70 Z"`;

describe("colourProfile", () => {
  it("names 11 basic colours in a fixed order", () => {
    expect(COLOUR_NAMES).toEqual(["black", "white", "grey", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown"]);
  });

  it("sees a red square on white as red, ignoring the white", async () => {
    const image = await sharp({ create: { width: 300, height: 300, channels: 3, background: "#ffffff" } })
      .composite([{ input: { create: { width: 140, height: 140, channels: 3, background: "#d01020" } }, top: 80, left: 80 }])
      .jpeg()
      .toBuffer();
    const h = await colourProfile(image);
    expect(h.length).toBe(11);
    expect(sum(h)).toBeCloseTo(1, 5);
    expect(share(h, "red")).toBeGreaterThan(0.9);
    expect(share(h, "white")).toBeLessThan(0.05);
  });

  it("sees a navy shirt as blue", async () => {
    const h = await colourProfile(await svgOnBackground(`${SHIRT} fill="#1f2d5c" stroke="#18213f" stroke-width="3"/>`, "#ffffff"));
    expect(share(h, "blue")).toBeGreaterThan(0.8);
    expect(share(h, "white")).toBeLessThan(0.05);
  });

  it("ignores a plain backdrop that is not white", async () => {
    const h = await colourProfile(await svgOnBackground(`<circle cx="120" cy="120" r="70" fill="#f08c14"/>`, "#c8c8c8"));
    expect(share(h, "orange")).toBeGreaterThan(0.85);
    expect(share(h, "grey")).toBeLessThan(0.1);
  });

  it("keeps a white product's white when it stands out from the backdrop", async () => {
    const h = await colourProfile(await svgOnBackground(`${SHIRT} fill="#ffffff" stroke="#202020" stroke-width="4"/>`, "#9aa0a6"));
    expect(share(h, "white")).toBeGreaterThan(0.7);
  });

  it("calls a product lost in its backdrop by the backdrop's colour", async () => {
    const h = await colourProfile(await svgOnBackground("", "#ffffff"));
    expect(share(h, "white")).toBe(1);
  });

  it("treats transparency as a white backdrop", async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200"><circle cx="100" cy="100" r="60" fill="#2a9a3c"/></svg>`;
    const png = await sharp(Buffer.from(svg)).png().toBuffer();
    expect((await sharp(png).metadata()).hasAlpha).toBe(true);
    expect(share(await colourProfile(png), "green")).toBeGreaterThan(0.85);
  });

  it("profiles real photos: a tabby cat is mostly brown, the rocket's sky blue", async () => {
    const photos = await samplePhotos(cacheDir);
    for (const image of Object.values(photos)) expect(sum(await colourProfile(image))).toBeCloseTo(1, 5);
    expect(share(await colourProfile(photos.chelsea), "brown")).toBeGreaterThan(0.5);
    expect(share(await colourProfile(photos.rocket), "blue")).toBeGreaterThan(0.3);
  });

  it("rejects bytes that are not an image", async () => {
    await expect(colourProfile(Buffer.from("nope"))).rejects.toThrow(/cannot decode/);
  });
});
