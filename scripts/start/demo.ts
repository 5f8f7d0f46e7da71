import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { API_SCOPES } from '@touchpoint/contracts';
import type { AdminCli } from './admin-cli.js';

/** Name of the organization `npm start` creates for a first look at the API. */
export const DEMO_ORGANIZATION_NAME = 'Touchpoint demo';
/** Its admin member (the creator of the demo key). `.test` is reserved: it never reaches anyone. */
export const DEMO_ADMIN_EMAIL = 'admin@demo.touchpoint.test';

/** The operator console's address: the gateway serves it under `/console/`. */
export function consoleUrl(gatewayUrl: string): string {
  return `${gatewayUrl.replace(/\/+$/, '')}/console/`;
}

/** What `npm start` remembers about one database's demo organization. */
export interface DemoAccess {
  organization_id: string;
  member_id?: string;
  api_key_id?: string;
  /** The API key; the CLI shows it once, so this file is the only copy. */
  secret?: string;
  created_at: string;
}

/** `.touchpoint/demo.json`: one demo per database + schema prefix, so switching DATABASE_URL is safe. */
interface DemoState {
  demos: Record<string, DemoAccess>;
}

/** How the gateway judged a stored key: accepted, rejected (401: wiped database, revoked), or unknown. */
export type KeyCheck = 'accepted' | 'rejected' | 'unknown';

export interface EnsureDemoOptions {
  cli: AdminCli;
  /** The JSON file holding the demo state. */
  stateFile: string;
  /** Which database the demo lives in (see `demoKey`). */
  key: string;
  /** Asks the gateway about a stored secret (GET /me). */
  checkKey: (secret: string) => Promise<KeyCheck>;
}

/** Identifies a database and schema prefix, without credentials. */
export function demoKey(databaseUrl: string, schemaPrefix: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname}:${url.port || 5432}${url.pathname}${schemaPrefix ? `#${schemaPrefix}` : ''}`;
}

/**
 * Returns the demo organization and API key of this database, creating them with the admin CLI
 * only when none is remembered. Each step's result is saved before the next runs, so a start-up
 * interrupted half-way resumes with the same organization rather than creating a second one. A
 * remembered key that the gateway rejects (the database was reset, or the key revoked) is replaced
 * by a new key on the same organization when it still exists, else by a new organization.
 * @returns the access and whether anything was created this time
 * @throws AdminCliError when a CLI step fails
 */
export async function ensureDemo(options: EnsureDemoOptions): Promise<{ access: DemoAccess; created: boolean }> {
  const state = await readState(options.stateFile);
  const save = async (next: DemoAccess): Promise<DemoAccess> => {
    state.demos[options.key] = next;
    await writeState(options.stateFile, state);
    return next;
  };
  let access: DemoAccess | undefined = state.demos[options.key];

  if (access?.secret) {
    if ((await options.checkKey(access.secret)) !== 'rejected') return { access, created: false };
    // The key is gone: keep the organization if the database still has it.
    try {
      access = await save({ organization_id: access.organization_id, member_id: await addAdmin(options.cli, access.organization_id), created_at: access.created_at });
    } catch {
      access = undefined;
    }
  }
  if (!access) {
    const org = await options.cli.run<{ id: string }>(['org:create', '--name', DEMO_ORGANIZATION_NAME]);
    access = await save({ organization_id: org.id, created_at: new Date().toISOString() });
  }
  const memberId = access.member_id ?? (await addAdmin(options.cli, access.organization_id));
  if (!access.member_id) access = await save({ ...access, member_id: memberId });
  const key = await options.cli.run<{ id: string; secret: string }>(['apikey:create', '--org', access.organization_id, '--member', memberId, '--scopes', API_SCOPES.join(','), '--name', 'npm start demo key']);
  access = await save({ ...access, api_key_id: key.id, secret: key.secret });
  return { access, created: true };
}

/** Adds (or finds: the CLI answers the existing member for a known email) the demo admin. */
async function addAdmin(cli: AdminCli, organizationId: string): Promise<string> {
  const member = await cli.run<{ id: string }>(['member:add', '--org', organizationId, '--email', DEMO_ADMIN_EMAIL, '--role', 'admin', '--name', 'Demo admin']);
  return member.id;
}

async function readState(file: string): Promise<DemoState> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<DemoState>;
    return { demos: parsed.demos && typeof parsed.demos === 'object' ? parsed.demos : {} };
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return { demos: {} };
    throw new Error(`${file} is not readable JSON (${(err as Error).message}); fix or delete it`, { cause: err });
  }
}

/** Writes through a temporary file and a rename, readable by the owner only (it holds a key). */
async function writeState(file: string, state: DemoState): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

/** Asks the gateway's `GET /me` whether it accepts `secret`. */
export async function checkKeyAtGateway(gatewayUrl: string, secret: string): Promise<KeyCheck> {
  try {
    const response = await fetch(`${gatewayUrl}/me`, { headers: { authorization: `Bearer ${secret}` }, signal: AbortSignal.timeout(5000) });
    await response.body?.cancel().catch(() => undefined);
    if (response.ok) return 'accepted';
    return response.status === 401 ? 'rejected' : 'unknown';
  } catch {
    return 'unknown';
  }
}
