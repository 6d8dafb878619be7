// A build's generation, as the query scripts name it: "<build>:<count>", the build's id and how many
// product writes it has taken (lexical-script.ts `writes`). What a process holds of a build (a
// filter's candidates, copies of nearest elements) is as of one; the write log says what changed since.

/** A generation's build and write count, or undefined for another form. */
export function parseGeneration(generation: string): { build: string; count: number } | undefined {
  const at = generation.lastIndexOf(":");
  const count = Number(generation.slice(at + 1));
  return at > 0 && Number.isInteger(count) ? { build: generation.slice(0, at), count } : undefined;
}

/** A generation's build. */
export function generationBuild(generation: string): string {
  return generation.slice(0, generation.lastIndexOf(":"));
}
