// Reads the README's shell examples as a reader would type them: its ```sh blocks, each split into
// commands (a command may span lines: trailing backslashes, or a quoted string left open), each
// with the output the README shows under it (`# {...}` / `# [...]` comment lines).

export interface ReadmeCommand {
  /** 1-based README line where the command starts. */
  line: number;
  text: string;
  /** The JSON-like output the README shows for it, if any (comment markers removed). */
  shown?: string;
}

export interface ReadmeBlock {
  line: number;
  commands: ReadmeCommand[];
}

/** Every ```sh block (also indented ones, in lists), in README order. */
export function shellBlocks(readme: string): ReadmeBlock[] {
  const lines = readme.split("\n");
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```sh\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j]!.trim() !== "```"; j++) body.push(lines[j]!.slice(indent));
    blocks.push({ line: i + 1, commands: splitCommands(body, i + 2) });
    i = j;
  }
  return blocks;
}

function splitCommands(body: string[], firstLine: number): ReadmeCommand[] {
  const commands: ReadmeCommand[] = [];
  let pending: { line: number; lines: string[] } | undefined;
  for (const [index, line] of body.entries()) {
    if (pending === undefined) {
      const comment = /^\s*#\s?(.*)$/.exec(line);
      if (comment) {
        const last = commands.at(-1);
        const text = comment[1]!;
        if (last && (/^[{[]/.test(text) || (last.shown !== undefined && /^\s/.test(text)))) last.shown = (last.shown ?? "") + text.trim();
        continue;
      }
      if (line.trim() === "") continue;
      pending = { line: firstLine + index, lines: [] };
    }
    pending.lines.push(line);
    const text = pending.lines.join("\n");
    if (!continues(text)) {
      commands.push({ line: pending.line, text });
      pending = undefined;
    }
  }
  if (pending) throw new Error(`README line ${pending.line}: a command never ends (unbalanced quotes?)`);
  return commands;
}

/** Whether shell text so far is an unfinished command: inside quotes, or ending in a backslash. */
function continues(text: string): boolean {
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
    } else if (c === "\\") {
      if (i === text.length - 1) return true;
      i++;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]!))) {
      const end = text.indexOf("\n", i);
      if (end === -1) return false;
      i = end;
    }
  }
  return quote !== undefined;
}

/**
 * What the README's shown output promises, as checks on the real output: every quoted string that
 * is not a placeholder (containing "...") appears, and every `"key":number|true|false` pair too,
 * except scores, which the README shows as examples.
 */
export function promisedFragments(shown: string): string[] {
  const fragments = new Set<string>();
  for (const match of shown.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    if (!match[1]!.includes("...")) fragments.add(match[0]);
  }
  for (const match of shown.matchAll(/"(\w+)":(-?\d+(?:\.\d+)?|true|false)\b/g)) {
    if (match[1] !== "score") fragments.add(match[0]);
  }
  return [...fragments];
}
