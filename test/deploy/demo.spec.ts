import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { API_SCOPES } from '@touchpoint/contracts';
import type { AdminCli } from '../../scripts/start/admin-cli.js';
import { consoleUrl, DEMO_ADMIN_EMAIL, demoKey, ensureDemo, type KeyCheck } from '../../scripts/start/demo.js';

/**
 * A scripted admin CLI: answers per the contract (/tmp/cli-contract.md) and records the calls, so
 * these tests can say exactly which commands `npm start` issues on each start. The real CLI is
 * exercised by test/deploy/start.e2e-spec.ts.
 */
class ScriptedCli implements AdminCli {
  calls: string[][] = [];
  organizations = new Set<string>();
  failNext?: string;
  private n = 0;

  async run<T>(args: string[]): Promise<T> {
    this.calls.push(args);
    const [command] = args;
    if (this.failNext === command) {
      this.failNext = undefined;
      throw new Error(`${command} failed`);
    }
    const option = (name: string) => args[args.indexOf(name) + 1];
    switch (command) {
      case 'org:create': {
        const id = `org-${++this.n}`;
        this.organizations.add(id);
        return { id, name: option('--name') } as T;
      }
      case 'member:add':
        if (!this.organizations.has(option('--org'))) throw new Error('not_found');
        return { id: `member-of-${option('--org')}`, organization_id: option('--org'), role: option('--role') } as T;
      case 'apikey:create':
        return { id: `key-${++this.n}`, secret: `tp_secret_${this.n}`, scopes: option('--scopes').split(',') } as T;
      default:
        throw new Error(`unexpected command ${command}`);
    }
  }
}

describe('ensureDemo', () => {
  let dir: string;
  let stateFile: string;
  let cli: ScriptedCli;
  let verdict: KeyCheck;
  const key = demoKey('postgres://postgres:pw@127.0.0.1:5432/touchpoint', '');
  const sut = (overrides: { key?: string } = {}) => ensureDemo({ cli, stateFile, key: overrides.key ?? key, checkKey: async () => verdict });

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tp-demo-'));
    stateFile = path.join(dir, '.touchpoint', 'demo.json');
    cli = new ScriptedCli();
    verdict = 'accepted';
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('creates an organization, an admin member and a key with every scope, and saves them owner-only', async () => {
    const { access, created } = await sut();

    expect(created).toBe(true);
    expect(cli.calls.map((c) => c[0])).toEqual(['org:create', 'member:add', 'apikey:create']);
    expect(cli.calls[1]).toEqual(expect.arrayContaining(['--email', DEMO_ADMIN_EMAIL, '--role', 'admin']));
    expect(cli.calls[2]).toEqual(expect.arrayContaining(['--org', 'org-1', '--member', 'member-of-org-1', '--scopes', API_SCOPES.join(',')]));
    expect(access).toMatchObject({ organization_id: 'org-1', member_id: 'member-of-org-1', api_key_id: 'key-2', secret: 'tp_secret_2' });
    const saved = JSON.parse(await readFile(stateFile, 'utf8'));
    expect(saved.demos[key]).toEqual(access);
    expect((await stat(stateFile)).mode & 0o777).toBe(0o600);
  });

  it('reuses the saved organization and key on the next start without calling the CLI', async () => {
    const first = await sut();
    cli.calls = [];

    const second = await sut();

    expect(second).toEqual({ access: first.access, created: false });
    expect(cli.calls).toEqual([]);
  });

  it('resumes an interrupted first start with the same organization', async () => {
    cli.failNext = 'member:add';
    await expect(sut()).rejects.toThrow('member:add failed');

    const { access } = await sut();

    expect(cli.calls.map((c) => c[0])).toEqual(['org:create', 'member:add', 'member:add', 'apikey:create']);
    expect(access.organization_id).toBe('org-1');
    expect(cli.organizations.size).toBe(1);
  });

  it('replaces a key the gateway rejects with a new key on the same organization', async () => {
    await sut();
    cli.calls = [];
    verdict = 'rejected';

    const { access, created } = await sut();

    expect(created).toBe(true);
    expect(cli.calls.map((c) => c[0])).toEqual(['member:add', 'apikey:create']);
    expect(access).toMatchObject({ organization_id: 'org-1', secret: 'tp_secret_3' });
  });

  it('creates a new organization when the rejected key belonged to one the database no longer has', async () => {
    await sut();
    cli.organizations.clear();
    cli.calls = [];
    verdict = 'rejected';

    const { access } = await sut();

    expect(cli.calls.map((c) => c[0])).toEqual(['member:add', 'org:create', 'member:add', 'apikey:create']);
    expect(access.organization_id).toBe('org-3');
  });

  it('keeps a reused key when the gateway cannot tell (not answering /me)', async () => {
    await sut();
    cli.calls = [];
    verdict = 'unknown';

    expect((await sut()).created).toBe(false);
    expect(cli.calls).toEqual([]);
  });

  it('keeps one demo per database and schema prefix', async () => {
    await sut();
    const other = demoKey('postgres://postgres@db.example:6543/other', 'p_');

    const { access } = await sut({ key: other });

    expect(other).toBe('db.example:6543/other#p_');
    expect(access.organization_id).toBe('org-3');
    const saved = JSON.parse(await readFile(stateFile, 'utf8'));
    expect(Object.keys(saved.demos).sort()).toEqual([key, other].sort());
    expect(key).toBe('127.0.0.1:5432/touchpoint');
  });
});

describe('consoleUrl', () => {
  it('is the gateway URL the start prints, followed by /console/', () => {
    expect(consoleUrl('http://127.0.0.1:3410')).toBe('http://127.0.0.1:3410/console/');
    expect(consoleUrl('https://touchpoint.example.com/')).toBe('https://touchpoint.example.com/console/');
  });
});
