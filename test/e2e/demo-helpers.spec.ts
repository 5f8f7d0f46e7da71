import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { demoNumber, type DemoContext } from '../../scripts/demo/demo-context.js';
import { DemoRuns, demoPhoneNumberId } from '../../scripts/demo/run-demo.js';

describe('demoPhoneNumberId', () => {
  it('gives each organization its own 15-digit phone-number id, the same every time', () => {
    const a = demoPhoneNumberId('a4e23da4-f9ba-42bc-b792-337e495a1598');
    const b = demoPhoneNumberId('1680918b-55b3-4385-aca6-006bef361063');
    expect(a).toMatch(/^9\d{14}$/);
    expect(b).toMatch(/^9\d{14}$/);
    expect(a).not.toBe(b);
    expect(demoPhoneNumberId('a4e23da4-f9ba-42bc-b792-337e495a1598')).toBe(a);
  });
});

describe('demoNumber', () => {
  const ctx = (runTag: string) => ({ runTag }) as DemoContext;

  it.each([0, 1, 2, 9])('slot %i is a 13-digit Brazilian mobile wa_id', (slot) => {
    expect(demoNumber(ctx('mx2vr0rf'), slot)).toMatch(new RegExp(`^551198${slot}\\d{6}$`));
  });

  it('differs between two runs', () => {
    expect(demoNumber(ctx('mx2vr0rf'), 1)).not.toBe(demoNumber(ctx('mx2vr0rg'), 1));
  });
});

describe(DemoRuns.name, () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tp-demo-runs-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('remembers an organization once marked, and only that one', async () => {
    const sut = new DemoRuns(path.join(dir, 'state', 'demo-runs.json'));
    expect(await sut.hasRun('org-a')).toBe(false);
    await sut.markRun('org-a', 1);
    expect(await sut.hasRun('org-a')).toBe(true);
    expect(await sut.hasRun('org-b')).toBe(false);
    const saved = JSON.parse(await readFile(path.join(dir, 'state', 'demo-runs.json'), 'utf8'));
    expect(saved['org-a']).toMatchObject({ failures: 1, ran_at: expect.any(String) });
  });

  it('refuses a state file that is not JSON rather than running the demo again over it', async () => {
    const file = path.join(dir, 'demo-runs.json');
    await (await import('node:fs/promises')).writeFile(file, 'not json');
    await expect(new DemoRuns(file).hasRun('org-a')).rejects.toThrow();
  });
});
