import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/** Runs the admin CLI in this world, as an operator would (`npm run cli -- …`). */
async function cli(w: OutreachWorld, args: string[]): Promise<{ code: number | null; json: any; stderr: string }> {
  const child = spawn('npm', ['run', '-s', 'cli', '--', ...args, '--json'], { env: { ...process.env, ...w.world.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, json: JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null'), stderr };
}

describe('outreach:drafts commands', () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_cli', { outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false' } });
    b = outreachBuilders(w);
  });
  afterAll(() => w.close());

  it('lists drafts, approves one with an edit and rejects another (regenerate), as JSON', async () => {
    const c = await b.campaign(org);
    const first = await b.enrollment(org, c.campaign_id, { name: 'Sarah Lee' });
    const second = await b.enrollment(org, c.campaign_id, { name: 'Tom Park' });
    const a1 = await b.pendingAction(org, first.enrollmentId);
    const a2 = await b.pendingAction(org, second.enrollmentId);

    const list = await cli(w, ['outreach:drafts:list', '--org', org]);
    expect(list.code).toBe(0);
    expect(list.json.total).toBe(2);
    expect(list.json.items.map((i: { action_id: string }) => i.action_id)).toEqual([a1.actionId, a2.actionId]);

    const badEdit = await cli(w, ['outreach:drafts:approve', '--org', org, '--action', a1.actionId, '--member', 'm-1', '--subject', 'Hi {name}', '--body', 'b']);
    expect([badEdit.code, badEdit.json.error.code]).toEqual([1, 'draft_placeholder']);
    const approved = await cli(w, ['outreach:drafts:approve', '--org', org, '--action', a1.actionId, '--member', 'm-1', '--subject', 'Chairs', '--body', 'Hi Sarah, a call?']);
    expect(approved.code).toBe(0);
    expect(approved.json).toMatchObject({ status: 'approved', approved_by: 'm-1', approved_payload: { subject: 'Chairs', body: 'Hi Sarah, a call?', to: first.person.email } });

    const noReason = await cli(w, ['outreach:drafts:reject', '--org', org, '--action', a2.actionId, '--member', 'm-1', '--then', 'regenerate']);
    expect([noReason.code, noReason.json.error.code]).toEqual([1, 'validation_failed']);
    const rejected = await cli(w, ['outreach:drafts:reject', '--org', org, '--action', a2.actionId, '--member', 'm-1', '--then', 'regenerate', '--reason', 'Mention the free trial.']);
    expect(rejected.json).toMatchObject({ status: 'rejected', reject_then: 'regenerate', rejected_by: 'm-1' });

    const empty = await cli(w, ['outreach:drafts:list', '--org', org]);
    expect(empty.json).toEqual({ items: [], total: 0 });
    // Each command is a fresh process (TypeScript compiled on start): several seconds apiece here.
  }, 180_000);
});
