import { Platform } from '../e2e/platform.js';
import { seeded } from '../safety/variants.js';
import { formatReport, reconcile } from './reconcile.js';
import type { ChaosReport, ChaosTarget, LedgerEntry, Rng } from './types.js';
import { runWorkload } from './workload.js';

/**
 * The chaos workload and its reconciliation on the platform as `npm start` runs it, with no fault
 * at all: whatever the reconciliation finds here is a defect of the platform (or of the judge), not
 * a consequence of a fault. ~30 s of asks, then the drain, then every count must be zero.
 */

const SEED = Number(process.env.CHAOS_SEED ?? 17_2026);
const DURATION_MS = Number(process.env.CHAOS_WORKLOAD_MS ?? 30_000);

function rngOf(seed: number): Rng {
  const next = seeded(seed);
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
  };
}

describe('Chaos workload and reconciliation without faults', () => {
  let platform: Platform;
  let target: ChaosTarget;
  let ledger: LedgerEntry[];
  let report: ChaosReport;
  const lines: string[] = [];
  let askedPerMinute = 0;

  beforeAll(async () => {
    platform = await Platform.start('chaoswl');
    const tenant = await platform.tenant('Chaos workload');
    target = { gatewayUrl: platform.url('gateway'), sandboxUrl: platform.url('sandbox'), apiKey: tenant.secret, organizationId: tenant.organizationId, seed: SEED };
  }, 420_000);
  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  it('asks for sends of every kind and records each with the ids the platform answered', async () => {
    const started = Date.now();
    ledger = await runWorkload(target, { durationMs: DURATION_MS, rng: rngOf(SEED), log: (s) => lines.push(s) });
    askedPerMinute = ledger.length / ((Date.now() - started) / 60_000);
    const kinds = new Set(ledger.map((e) => e.kind));
    expect(ledger.length).toBeGreaterThan(0);
    expect([...kinds].sort()).toEqual(['followup', 'notification', 'operator_send', 'outreach']);
    // Every ask the platform answered carries its id: an enrollment, a notification, a message.
    const unanswered = ledger.filter((e) => !e.ids.enrollment_id && !e.ids.notification_id && !e.ids.message_id);
    expect(unanswered.map((e) => `${e.ref} ${JSON.stringify(e.ids)}`)).toEqual([]);
    expect(ledger.some((e) => e.stop)).toBe(true);
  }, 600_000);

  it('reconciles to zero duplicates, lost, forbidden, pacing violations and stuck sends', async () => {
    report = await reconcile(target, ledger, { drainTimeoutMs: 240_000, faults: {}, durationMs: DURATION_MS, log: (s) => lines.push(s) });
    process.stdout.write(`${formatReport(report)}\nasks per minute: ${askedPerMinute.toFixed(0)}\n${lines.join('\n')}\n`);
    expect(report.details).toEqual([]);
    expect(report.violations).toEqual({ duplicates: 0, lost: 0, forbidden: 0, pacing: 0, stuck: 0 });
    expect(report.sends.asked).toBeGreaterThan(0);
    expect(report.sends.accepted).toBeGreaterThan(0);
  }, 600_000);
});
