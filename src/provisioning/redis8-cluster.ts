// A real Redis 8 Cluster on this machine, for tests and benchmarks: the same Redis 8 the project
// provisions (Debian trixie's build fetched into the cache), started in cluster mode on the given
// ports and joined by `redis-cli --cluster create` with one master per node. Operators bring their
// own cluster and name it in REDIS_CLUSTER_NODES; nothing here runs in production.
import path from "node:path";
import { isUsableRedis8, probeRedis } from "./probe-redis.js";
import { startRedisChild } from "./redis-process.js";
import { freePort } from "./redis8.js";
import type { RedisChild } from "./redis-process.js";
import { runCommand } from "./run-command.js";
import { ensureTrixieRedis } from "./trixie-redis.js";

export interface ProvisionedRedisCluster {
  nodes: { host: string; port: number }[];
  /** host:port,host:port,... as REDIS_CLUSTER_NODES takes it. */
  nodeList: string;
  stop(): Promise<void>;
}

export interface ProvisionRedisClusterOptions {
  cacheDir: string;
  /** One master per port; at least 3 (Redis Cluster's minimum). */
  ports: number[];
  /** Each node keeps its files in <dataDir>/<port>. */
  dataDir: string;
  log?: (line: string) => void;
}

const HOST = "127.0.0.1";
/** `cluster_state` reads "fail" for a second or two after creation. */
const READY_TIMEOUT_MS = 30_000;

export async function provisionRedis8Cluster(opts: ProvisionRedisClusterOptions): Promise<ProvisionedRedisCluster> {
  const log = opts.log ?? (() => undefined);
  if (opts.ports.length < 3) throw new Error("a Redis Cluster needs at least 3 masters");
  for (const port of opts.ports) {
    const probe = await probeRedis(HOST, port);
    if (probe.kind !== "free") throw new Error(`port ${port} on ${HOST} is in use: choose other ports for the Redis Cluster`);
  }
  const redis = await ensureTrixieRedis({ cacheDir: opts.cacheDir, log });
  const server = redis.serverCommand();
  const cli = redis.cliCommand();
  const children: RedisChild[] = [];
  const stop = async () => {
    await Promise.all(children.map((c) => c.stop()));
  };
  try {
    for (const port of opts.ports) {
      children.push(
        await startRedisChild({
          command: server.command,
          args: server.args,
          port,
          dataDir: path.join(opts.dataDir, String(port)),
          // The bus port named too: Redis's own choice, the port plus 10,000, fails for a port past
          // 55,535, which a free port from this machine's ephemeral range (to 60,999) can be.
          extraArgs: ["--cluster-enabled", "yes", "--cluster-port", String(await freePort()), "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000", "--appendonly", "no"],
          log,
        }),
      );
    }
    const addresses = opts.ports.map((port) => `${HOST}:${port}`);
    log(`creating a Redis Cluster of ${addresses.length} masters: ${addresses.join(" ")}`);
    await runCommand(cli.command, [...cli.args, "--cluster", "create", ...addresses, "--cluster-replicas", "0", "--cluster-yes"], {
      timeoutMs: 60_000,
    });
    await waitForClusterOk(cli, opts.ports);
    for (const port of opts.ports) {
      const probe = await probeRedis(HOST, port);
      if (!isUsableRedis8(probe)) throw new Error(`Redis Cluster node ${HOST}:${port} cannot serve vector sets`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const nodes = opts.ports.map((port) => ({ host: HOST, port }));
  return { nodes, nodeList: nodes.map((n) => `${n.host}:${n.port}`).join(","), stop };
}

async function waitForClusterOk(cli: { command: string; args: string[] }, ports: number[]): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const states = await Promise.all(
      ports.map(async (port) => {
        const { stdout } = await runCommand(cli.command, [...cli.args, "-h", HOST, "-p", String(port), "CLUSTER", "INFO"], { timeoutMs: 5000 });
        return /cluster_state:ok/.test(stdout);
      }),
    );
    if (states.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error(`the Redis Cluster on ports ${ports.join(", ")} did not reach cluster_state:ok within ${READY_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
