// Maps sRGB colours to the 11 basic colour terms of Berlin & Kay: a pixel takes the name of the
// nearest of a few hand-placed prototypes per name (dark, mid, light variants) in CIELAB. The
// decision for every colour is precomputed into a 32x32x32 table (32 KB) at module load.

export const COLOUR_NAMES = [
  "black", "white", "grey", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown",
] as const;

export type ColourName = (typeof COLOUR_NAMES)[number];

type Rgb = [number, number, number];

const PROTOTYPES: Record<ColourName, Rgb[]> = {
  // Studio light renders black cloth as dark grey and puts shading on white cloth; without the
  // third prototypes most black and white products came out grey (argmax agreement with the
  // catalog's basic colour on fashion photos: 0.48 -> 0.56).
  black: [[0, 0, 0], [35, 35, 40], [60, 60, 65]],
  white: [[255, 255, 255], [236, 236, 230], [218, 218, 215]],
  grey: [[128, 128, 128], [190, 190, 190], [75, 75, 78]],
  red: [[200, 30, 35], [130, 20, 35], [230, 80, 70]],
  orange: [[240, 140, 20], [250, 170, 90]],
  yellow: [[240, 220, 40], [235, 215, 130]],
  green: [[40, 150, 60], [35, 75, 35], [130, 200, 120], [110, 120, 50]],
  // Navy is sold as blue: the dark prototype keeps it from falling to black; washed denim needs
  // the desaturated one.
  blue: [[30, 70, 200], [25, 35, 90], [110, 160, 220], [40, 120, 160], [70, 85, 115]],
  purple: [[120, 40, 150], [180, 140, 200], [80, 30, 90]],
  pink: [[240, 130, 180], [250, 200, 210], [210, 60, 130]],
  brown: [[120, 70, 30], [190, 160, 120], [80, 50, 30], [160, 110, 70]],
};

export function srgbToLab(r: number, g: number, b: number): Rgb {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const R = lin(r), G = lin(g), B = lin(b);
  const x = (0.4124 * R + 0.3576 * G + 0.1805 * B) / 0.95047;
  const y = 0.2126 * R + 0.7152 * G + 0.0722 * B;
  const z = (0.0193 * R + 0.1192 * G + 0.9505 * B) / 1.08883;
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
  const fx = f(x), fy = f(y), fz = f(z);
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

const TABLE = (() => {
  const protos = COLOUR_NAMES.flatMap((name, index) => PROTOTYPES[name].map((rgb) => ({ index, lab: srgbToLab(...rgb) })));
  const table = new Uint8Array(32 * 32 * 32);
  for (let r = 0; r < 32; r++) {
    for (let g = 0; g < 32; g++) {
      for (let b = 0; b < 32; b++) {
        const [L, A, B] = srgbToLab(r * 8 + 4, g * 8 + 4, b * 8 + 4);
        let best = 0;
        let bestDistance = Infinity;
        for (const p of protos) {
          const d = (L - p.lab[0]) ** 2 + (A - p.lab[1]) ** 2 + (B - p.lab[2]) ** 2;
          if (d < bestDistance) {
            bestDistance = d;
            best = p.index;
          }
        }
        table[(r << 10) | (g << 5) | b] = best;
      }
    }
  }
  return table;
})();

/** Index into COLOUR_NAMES of an 8-bit sRGB colour. */
export function colourNameIndex(r: number, g: number, b: number): number {
  return TABLE[((r >> 3) << 10) | ((g >> 3) << 5) | (b >> 3)]!;
}
