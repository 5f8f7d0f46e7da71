import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Ports this process has handed out already; never handed out twice. */
const handedOut = new Set<number>();

/**
 * The bottom of the kernel's ephemeral range, from which it picks the local port of every outgoing
 * connection and of every `listen(0)`; Linux's default where /proc cannot be read.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 1024) return low;
  } catch {
    // Not Linux, or /proc hidden: the default below.
  }
  return 32768;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, for a child process to listen on later.
 *
 * Chosen at random below the kernel's ephemeral range, never from it: a port taken with `listen(0)`
 * and closed again can be reused, before the child binds it, as the local port of any outgoing
 * connection on the machine (the suites open thousands to PostgreSQL and RabbitMQ), and the child
 * then fails with EADDRINUSE. Below the range only another suite's explicit choice can collide, and
 * the random pick over ~12,000 ports makes that rare; within one process a port is never repeated.
 *
 * @throws Error when no port in the range can be bound after 200 tries.
 */
export async function freePort(): Promise<number> {
  const top = Math.min(ephemeralLow(), 65536) - 1;
  const bottom = Math.max(1024, top - 12_000);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = bottom + Math.floor(Math.random() * (top - bottom + 1));
    if (handedOut.has(port)) continue;
    if (await bindable(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${bottom}..${top}`);
}
