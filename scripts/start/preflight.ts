import amqplib from 'amqplib';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import pg from 'pg';

/** How long one reachability check may take before the dependency counts as unreachable, ms. */
const CHECK_TIMEOUT_MS = 3000;

/** A dependency that did not answer, with what was tried. */
export interface Unreachable {
  dependency: 'PostgreSQL' | 'RabbitMQ';
  /** `host:port` tried (no credentials). */
  address: string;
  /** The driver's reason, e.g. `connect ECONNREFUSED 127.0.0.1:5432`. */
  reason: string;
}

/** `host:port` of a database or broker URL, credentials left out. */
export function addressOf(url: string, defaultPort: number): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || '127.0.0.1'}:${parsed.port || defaultPort}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Connects to the server of `databaseUrl` (its `postgres` maintenance database, since the target
 * database may not exist yet). Resolves `undefined` when it answers.
 */
export async function checkPostgres(databaseUrl: string): Promise<Unreachable | undefined> {
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: CHECK_TIMEOUT_MS });
  // A server that drops the connection later must not crash this process.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (err) {
    return { dependency: 'PostgreSQL', address: addressOf(databaseUrl, 5432), reason: (err as Error).message || String(err) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Opens and closes one AMQP connection. Resolves `undefined` when the broker answers. */
export async function checkRabbitMq(amqpUrl: string): Promise<Unreachable | undefined> {
  try {
    const connection = await amqplib.connect(amqpUrl, { timeout: CHECK_TIMEOUT_MS });
    connection.on('error', () => undefined);
    await connection.close();
    return undefined;
  } catch (err) {
    return { dependency: 'RabbitMQ', address: addressOf(amqpUrl, 5672), reason: (err as Error).message || String(err) };
  }
}

/** The installed PostgreSQL major on a Debian host (`/etc/postgresql/<ver>`), or `<version>`. */
function debianPostgresVersion(): string {
  try {
    const versions = readdirSync('/etc/postgresql').filter((v) => /^\d+$/.test(v));
    return versions.sort((a, b) => Number(b) - Number(a))[0] ?? '<version>';
  } catch {
    return '<version>';
  }
}

/**
 * The single line `npm start` prints when a dependency does not answer: which one, the address
 * tried, why, and how to start it.
 */
export function unreachableMessage(failures: Unreachable[]): string {
  const what = failures.map((f) => `${f.dependency} is not reachable at ${f.address} (${f.reason})`).join(' and ');
  const debian = failures.map((f) => (f.dependency === 'PostgreSQL' ? `pg_ctlcluster --skip-systemctl-redirect ${debianPostgresVersion()} main start` : 'rabbitmq-server -detached'));
  const variables = failures.map((f) => (f.dependency === 'PostgreSQL' ? 'DATABASE_URL' : 'AMQP_URL')).join(' / ');
  return `${what}. Start it with \`docker compose -f deploy/docker-compose.yml up -d postgres rabbitmq\`, ` + `or on Debian \`${debian.join(' && ')}\`, or point ${variables} at a running one.`;
}

/** Checks both dependencies at once; resolves the ones that did not answer. */
export async function preflight(databaseUrl: string, amqpUrl: string): Promise<Unreachable[]> {
  const results = await Promise.all([checkPostgres(databaseUrl), checkRabbitMq(amqpUrl)]);
  return results.filter((r): r is Unreachable => r !== undefined);
}

/** Resolves true when nothing listens on `host:port` (so a child can bind it). */
export function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
