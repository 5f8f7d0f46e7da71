import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { type ContactView, type EmailSuppressionResult, type EnrollBatchResult, MessagingRpc, OutboxCommands, OutreachRpc, OutreachSuppressionRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { RpcClient } from '@touchpoint/runtime';
import { eventually } from '@touchpoint/testing';
import { PeopleDirectory } from '../../apps/outreach/src/directory/people.directory.js';
import { OptOutService } from '../../apps/outreach/src/interrupts/opt-out.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

const CAMPAIGNS = 10;
// 500 live enrollments: the old match read one person per enrollment (500 reads); the indexed one reads none.
const PER_CAMPAIGN = 50;

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * The opt-out and bounce match at scale (seed 003 §4.7, "The match"): with 500 live enrollments
 * across ten campaigns, an unsubscribe, a bounce or a reply's opt-out is one indexed match, not one
 * read of a person per live enrollment, and it ends exactly the enrollments of that address.
 */
describe(`${OptOutService.name} at scale`, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  const org = `org-${randomUUID()}`;
  let people: ContactView[];
  let enrollmentOf: Map<string, string>;
  let contactReads: () => number;

  beforeAll(async () => {
    // No runner: the rows stay as enrollment leaves them.
    w = await startOutreachWorld('outreach_optout_scale', { outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false', OUTREACH_SWEEP_INTERVAL_MS: '0' } });
    b = outreachBuilders(w);
    const campaigns = await pool(
      Array.from({ length: CAMPAIGNS }, (_, i) => i),
      4,
      () => b.campaign(org),
    );
    people = await pool(
      Array.from({ length: CAMPAIGNS * PER_CAMPAIGN }, (_, i) => i),
      16,
      (i) => w.contact(org, { name: `Person ${i}`, email: `p${i}.${randomUUID().slice(0, 6)}@acme.example` }),
    );
    enrollmentOf = new Map();
    for (let c = 0; c < CAMPAIGNS; c++) {
      const batch = people.slice(c * PER_CAMPAIGN, (c + 1) * PER_CAMPAIGN);
      const result = await w.rpc.callUnchecked<EnrollBatchResult>('outreach', OutreachRpc.EnrollBatch, { organization_id: org, campaign_id: campaigns[c]!.id, people: batch.map((p) => ({ person_kind: p.kind, person_id: p.id })) }, 60_000);
      result.results.forEach((r, i) => {
        expect(r.result).toBe('added');
        enrollmentOf.set(batch[i]!.id, (r as { enrollment_id: string }).enrollment_id);
      });
    }
    expect(await w.sql(`SELECT count(*)::int AS n FROM {o}.enrollments WHERE organization_id = $1 AND status = 'active'`, [org])).toEqual([{ n: CAMPAIGNS * PER_CAMPAIGN }]);
    // Every person read outreach makes from messaging, counted from here on.
    const rpc = w.outreach.get(RpcClient);
    const call = rpc.call.bind(rpc);
    let reads = 0;
    jest.spyOn(rpc, 'call').mockImplementation(((service: string, pattern: string, ...rest: unknown[]) => {
      if (pattern === MessagingRpc.ContactGet) reads += 1;
      return (call as (...a: unknown[]) => Promise<unknown>)(service, pattern, ...rest);
    }) as typeof rpc.call);
    contactReads = () => reads;
  }, 600_000);
  afterAll(() => w.close());

  const status = async (ids: string[]) => w.sql(`SELECT id, status, ended_reason FROM {o}.enrollments WHERE id = ANY($1::uuid[]) ORDER BY id`, [ids]);
  const live = async () => (await w.sql(`SELECT count(*)::int AS n FROM {o}.enrollments WHERE organization_id = $1 AND status = 'active'`, [org]))[0]!.n as number;

  it('an unsubscribe reads no person per live enrollment, and ends exactly the enrollment of that address', async () => {
    const target = people[234]!;
    const before = contactReads();
    const result = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: target.email!.toUpperCase() });

    expect(result.enrollment_ids).toEqual([enrollmentOf.get(target.id)]);
    expect(await status([enrollmentOf.get(target.id)!])).toEqual([{ id: enrollmentOf.get(target.id), status: 'ended', ended_reason: 'opted_out' }]);
    expect(await live()).toBe(CAMPAIGNS * PER_CAMPAIGN - 1);
    expect(contactReads() - before).toBe(0);
  }, 60_000);

  it('a bounce of several addresses moves exactly their enrollments, with no person read', async () => {
    const targets = [people[7]!, people[277]!, people[499]!];
    const before = contactReads();
    const result = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailBounce, { organization_id: org, emails: targets.map((t) => t.email), provider_message_id: `nylas-${randomUUID()}` });
    expect([...result.enrollment_ids].sort()).toEqual(targets.map((t) => enrollmentOf.get(t.id)!).sort());
    expect(contactReads() - before).toBe(0);
    expect(await live()).toBe(CAMPAIGNS * PER_CAMPAIGN - 1);
  }, 60_000);

  it("matches a person's current address after messaging changed it, and no longer the old one", async () => {
    const moved = people[42]!;
    const newEmail = `moved.${randomUUID().slice(0, 6)}@acme.example`;
    await w.rpc.call('messaging', MessagingRpc.ContactUpdate, { organization_id: org, contact_id: moved.id, email: newEmail });
    await eventually(async () => (await w.sql(`SELECT 1 FROM {o}.person_addresses WHERE organization_id = $1 AND person_id = $2 AND email = $3`, [org, moved.id, newEmail]))[0], 20_000);

    const old = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: moved.email });
    expect(old.enrollment_ids).toEqual([]);
    const current = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: newEmail });
    expect(current.enrollment_ids).toEqual([enrollmentOf.get(moved.id)]);
  }, 60_000);

  it('commits the stop when messaging cannot be read for the older enrollments, and ends those at the next match', async () => {
    const legacy = [people[120]!, people[320]!];
    await w.sql(`DELETE FROM {o}.person_addresses WHERE organization_id = $1 AND person_id = ANY($2::text[])`, [org, legacy.map((p) => p.id)]);
    const directory = w.outreach.get(PeopleDirectory);
    const down = jest.spyOn(directory, 'person').mockRejectedValue(new AppError(ErrorCode.ServiceUnavailable, 'messaging down'));
    let during: EmailSuppressionResult;
    try {
      during = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: legacy[0]!.email });
    } finally {
      down.mockRestore();
    }
    // The suppression committed (its command in the outbox) though the person behind the address could not be read.
    expect(during.suppressed).toEqual([{ channel: 'email', value: legacy[0]!.email!.toLowerCase() }]);
    expect(during.enrollment_ids).toEqual([]);
    expect(await w.sql(`SELECT 1 FROM {o}.outbox_events WHERE type = $1 AND payload->'data'->>'value' = $2`, [OutboxCommands.Suppress, legacy[0]!.email!.toLowerCase()])).toHaveLength(1);
    // Messaging back: the repeated click reads them and ends the enrollment.
    const after = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: legacy[0]!.email });
    expect(after.enrollment_ids).toEqual([enrollmentOf.get(legacy[0]!.id)]);
  }, 60_000);

  it('reads from messaging only the people enrolled before the read model held them, once', async () => {
    const legacy = [people[100]!, people[300]!, people[450]!];
    await w.sql(`DELETE FROM {o}.person_addresses WHERE organization_id = $1 AND person_id = ANY($2::text[])`, [org, legacy.map((p) => p.id)]);
    let before = contactReads();
    const first = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: legacy[1]!.email });
    expect(first.enrollment_ids).toEqual([enrollmentOf.get(legacy[1]!.id)]);
    expect(contactReads() - before).toBe(3);
    before = contactReads();
    const second = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: legacy[2]!.email });
    expect(second.enrollment_ids).toEqual([enrollmentOf.get(legacy[2]!.id)]);
    expect(contactReads() - before).toBe(0);
  }, 60_000);
});
