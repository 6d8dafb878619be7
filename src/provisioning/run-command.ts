// execFile with the failure turned into a message a person can act on: the command line and the
// tail of its output, which is where apt and dpkg say what went wrong.
import { execFile } from "node:child_process";

export interface CommandResult {
  stdout: string;
  stderr: string;
}

export class CommandError extends Error {
  constructor(
    message: string,
    readonly result: CommandResult & { code: number | string | null },
  ) {
    super(message);
  }
}

function tail(text: string, lines = 12): string {
  return text.trim().split("\n").slice(-lines).join("\n");
}

export function runCommand(
  command: string,
  args: readonly string[],
  opts: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [...args],
      { cwd: opts.cwd, timeout: opts.timeoutMs ?? 120_000, env: opts.env, maxBuffer: 32 * 1024 * 1024, encoding: "utf8" },
      (err, stdout, stderr) => {
        if (!err) {
          resolve({ stdout, stderr });
          return;
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string | null };
        const why = e.code === "ENOENT" ? "not found" : e.killed ? "timed out" : `exited with ${String(e.code)}`;
        const output = tail(`${stdout}\n${stderr}`);
        reject(
          new CommandError(`\`${[command, ...args].join(" ")}\` ${why}${output ? `:\n${output}` : ""}`, {
            stdout,
            stderr,
            code: e.code ?? null,
          }),
        );
      },
    );
  });
}
