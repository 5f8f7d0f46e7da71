import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { ErrorEnvelope } from '@touchpoint/errors';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/** Runs the admin CLI in this world, as an operator would (`npm run cli -- …`). */
async function cli<T = unknown>(w: OutreachWorld, args: string[]): Promise<{ code: number | null; json: T; stderr: string }> {
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
  let org: string;
  let member: string;

  beforeAll(async () => {
    // The gateway's schema holds the members the commands check `--member` against.
    w = await startOutreachWorld('outreach_cli', { gateway: true, outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false' } });
    b = outreachBuilders(w);
    const seeded = await w.builders!.organizationWithKey({ role: 'operator', scopes: ['outreach:read'] });
    org = seeded.organizationId;
    member = seeded.memberId;
  });
  afterAll(() => w.close());

  it('lists drafts, approves one with an edit and rejects another (regenerate), as JSON', async () => {
    const c = await b.campaign(org);
    const first = await b.enrollment(org, c.id, { name: 'Sarah Lee' });
    const second = await b.enrollment(org, c.id, { name: 'Tom Park' });
    const a1 = await b.pendingAction(org, first.enrollmentId);
    const a2 = await b.pendingAction(org, second.enrollmentId);

    const list = await cli<{ total: number; items: { id: string }[] }>(w, ['outreach:drafts:list', '--org', org]);
    expect(list.code).toBe(0);
    expect(list.json.total).toBe(2);
    expect(list.json.items.map((i: { id: string }) => i.id)).toEqual([a1.actionId, a2.actionId]);

    const badEdit = await cli<ErrorEnvelope>(w, ['outreach:drafts:approve', '--org', org, '--action', a1.actionId, '--member', member, '--subject', 'Hi {name}', '--body', 'b']);
    expect([badEdit.code, badEdit.json.error.code]).toEqual([1, 'draft_placeholder']);
    // A subject alone is an edit of the subject: the draft's body stays.
    const approved = await cli(w, ['outreach:drafts:approve', '--org', org, '--action', a1.actionId, '--member', member, '--subject', 'Chairs']);
    expect(approved.code).toBe(0);
    expect(approved.json).toMatchObject({ status: 'approved', approved_by: member, approved_payload: { subject: 'Chairs', body: a1.draft.body, to: first.person.email } });

    const noReason = await cli<ErrorEnvelope>(w, ['outreach:drafts:reject', '--org', org, '--action', a2.actionId, '--member', member, '--then', 'regenerate']);
    expect([noReason.code, noReason.json.error.code]).toEqual([1, 'validation_failed']);
    const rejected = await cli(w, ['outreach:drafts:reject', '--org', org, '--action', a2.actionId, '--member', member, '--then', 'regenerate', '--reason', 'Mention the free trial.']);
    expect(rejected.json).toMatchObject({ status: 'rejected', reject_then: 'regenerate', rejected_by: member });

    const empty = await cli(w, ['outreach:drafts:list', '--org', org]);
    expect(empty.json).toEqual({ items: [], total: 0 });
    // Each command is a fresh process (TypeScript compiled on start): several seconds apiece here.
  }, 180_000);

  it('refuses a --member who is not a current member of the organization (exit 1) and records nothing', async () => {
    const c = await b.campaign(org);
    const { enrollmentId } = await b.enrollment(org, c.id);
    const { actionId } = await b.pendingAction(org, enrollmentId);
    const stranger = await w.builders!.organizationWithKey({ scopes: ['outreach:read'] });
    const leaver = await w.builders!.organizationWithKey({ organizationId: org, role: 'operator', scopes: ['outreach:read'], email: `leaver.${randomUUID().slice(0, 6)}@example.com` });
    await w.builders!.members.remove(org, leaver.memberId);

    const invented = await cli<ErrorEnvelope>(w, ['outreach:drafts:approve', '--org', org, '--action', actionId, '--member', 'm-1']);
    expect([invented.code, invented.json.error.code]).toEqual([1, 'not_found']);
    expect(invented.json.error.message).toContain('--member');
    const foreign = await cli<ErrorEnvelope>(w, ['outreach:drafts:approve', '--org', org, '--action', actionId, '--member', stranger.memberId]);
    expect([foreign.code, foreign.json.error.code]).toEqual([1, 'not_found']);
    const gone = await cli<ErrorEnvelope>(w, ['outreach:drafts:reject', '--org', org, '--action', actionId, '--member', leaver.memberId, '--then', 'stop']);
    expect([gone.code, gone.json.error.code]).toEqual([1, 'forbidden']);

    expect(await b.action(actionId)).toMatchObject({ status: 'pending_approval', approved_by: null, rejected_by: null });
  }, 180_000);
});
