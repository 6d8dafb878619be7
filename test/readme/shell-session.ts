// One bash process that runs commands one at a time, as a reader pasting them into a terminal
// would: variables, functions and exports carry from one command to the next.
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";

export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface ShellSession {
  run(command: string, timeoutMs: number): Promise<CommandResult>;
  close(): void;
}

export function startShellSession(options: { cwd: string; env: NodeJS.ProcessEnv; prelude: string }): ShellSession {
  const shell: ChildProcessWithoutNullStreams = spawn("bash", ["--noprofile", "--norc"], { cwd: options.cwd, env: options.env });
  let stdout = "";
  let stderr = "";
  shell.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  shell.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  shell.stdin.write(`${options.prelude}\n`);

  return {
    run(command, timeoutMs) {
      const marker = `@@done-${randomBytes(6).toString("hex")}@@`;
      stdout = "";
      stderr = "";
      // The command's own text goes in verbatim, in a group (no subshell: its variables stay) that
      // cannot read the marker line, which reports its exit code, from the shell's input.
      shell.stdin.write(`{ ${command}\n} </dev/null\nprintf '\\n${marker}%d\\n' "$?"\n`);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          clearInterval(poll);
          reject(new Error(`no answer within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
        }, timeoutMs);
        const poll = setInterval(() => {
          const done = new RegExp(`\\n${marker}(\\d+)\\n`).exec(stdout);
          if (!done) {
            if (shell.exitCode !== null) {
              clearInterval(poll);
              clearTimeout(timer);
              reject(new Error(`the shell exited (${shell.exitCode})\nstdout: ${stdout}\nstderr: ${stderr}`));
            }
            return;
          }
          clearInterval(poll);
          clearTimeout(timer);
          resolve({ exitCode: Number(done[1]), stdout: stdout.slice(0, done.index), stderr });
        }, 20);
      });
    },
    close() {
      shell.stdin.end();
      shell.kill();
    },
  };
}
