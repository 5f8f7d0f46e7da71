import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { OutboxEvents } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { aWhatsAppNumber, createTestWorld, type TestWorld } from '@touchpoint/testing';
import { AttemptsRepository } from '../../apps/outbox-dispatcher/src/drain/attempts.repository.js';
import { PairLeaseRepository } from '../../apps/outbox-dispatcher/src/drain/pair-lease.repository.js';
import { LeaseRecoveryService } from '../../apps/outbox-dispatcher/src/sweep/lease-recovery.service.js';
import { SWEEP_STEPS, type SweepStep } from '../../apps/outbox-dispatcher/src/sweep/sweep.service.js';
import { DrainService } from '../../apps/outbox-dispatcher/src/drain/drain.service.js';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

/**
 * Lease recovery, correlation evidence, the sweep's isolated steps and pruning, with a clock the
 * test moves (seed 004 "Dispatch order", "Ambiguity is resolved by correlation", the sweep).
 */
describe('outbox sweep', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let org: string;
  const phoneNumberId = '100000000000002';
  let seq = 0;
  const newNumber = () => `55219${String(80000000 + ++seq * 7919).slice(-8)}`;
  const schema = () => world.schema('outbox-dispatcher');
  const entry = async (id: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM "${schema()}".message_outbox WHERE id = $1`, [id]))[0];
  const entryEvents = async (id: string) => (await world.sql<{ type: string }>(`SELECT type FROM "${schema()}".outbox_events WHERE payload->'data'->>'entry_id' = $1 AND type LIKE 'outbox.entry.%' ORDER BY id`, [id])).map((r) => r.type);

  /**
   * Leaves an entry exactly as a dispatcher that died at `stage` leaves it: claimed (`prepare`), or
   * claimed with its attempt opened and the pacing gate stamped (`opened`).
   */
  async function strandedByDeadDispatcher(to: string, stage: 'prepare' | 'opened'): Promise<string> {
    const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
    const uow = d.app.get(UnitOfWork);
    const pairs = d.app.get(PairLeaseRepository);
    const attempts = d.app.get(AttemptsRepository);
    const now = d.clock.now();
    await uow.run(async (tx) => {
      const claim = await pairs.claimPair(tx, now, 'dead-dispatcher', 60_000, 6500);
      if (!claim?.entry || claim.entry.id !== entry_id) throw new Error('the test expected to claim its own entry');
      if (stage === 'opened') {
        if (!(await pairs.stampPacingGate(tx, claim.lease, now, 6500))) throw new Error('gate refused');
        const n = await attempts.bumpAttempt(tx, entry_id, claim.lease.fence, now, null);
        await attempts.insertAttempt(tx, entry_id, claim.lease, n!, now);
      }
    });
    return entry_id;
  }

  beforeAll(async () => {
    world = await createTestWorld('outbox_sweep');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox, { OUTBOX_LEASE_MS: '60000' });
    org = `org-${randomUUID()}`;
    await aWhatsAppNumber(d, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  describe('lease recovery', () => {
    it('settles a send accepted from a status that arrived while it was still sending', async () => {
      const to = newNumber();
      const id = await strandedByDeadDispatcher(to, 'opened');
      const wamid = `wamid.EVIDENCE${seq}`;
      const answer = await d.resolution.recordWhatsAppStatuses({ phone_number_id: phoneNumberId, statuses: [{ id: wamid, status: 'sent', timestamp: '1750030073', recipient_id: to, biz_opaque_callback_data: id }] });
      expect(answer.outcomes[0].outcome).toBe('evidence_recorded');
      expect(await entry(id)).toMatchObject({ status: 'sending', evidence: expect.objectContaining({ provider_message_id: wamid, status: 'sent' }) });

      // Inside the lease nothing moves: the dispatcher holding the claim is the only writer.
      expect((await d.app.get(LeaseRecoveryService).recover()).acceptedByEvidence).toBe(0);
      d.clock.advance(60_001);
      const report = await d.app.get(LeaseRecoveryService).recover();
      expect(report.acceptedByEvidence).toBe(1);
      expect(await entry(id)).toMatchObject({ status: 'accepted', provider_message_id: wamid });
      expect(await entryEvents(id)).toEqual([OutboxEvents.EntryAccepted]);
      await d.drain.drain(2000);
      expect(await sandbox.received(to)).toHaveLength(0);
    });

    it('parks a send whose dispatcher died after opening the attempt as ambiguous, and never resends it', async () => {
      const to = newNumber();
      const id = await strandedByDeadDispatcher(to, 'opened');
      const behind = await d.enqueue.enqueue(textTo(org, to));
      d.clock.advance(60_001);
      expect((await d.app.get(LeaseRecoveryService).recover()).ambiguous).toBe(1);
      expect(await entry(id)).toMatchObject({ status: 'ambiguous', last_classification: 'ambiguous', attempts: 1 });
      expect(await entryEvents(id)).toEqual([OutboxEvents.EntryAmbiguous]);
      await d.drain.drain(2000);
      d.clock.advance(3_600_000);
      await d.drain.drain(2000);
      const calls = await sandbox.received(to);
      expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([behind.entry_id]);
    });

    it('requeues a send whose dispatcher died while preparing, and sends it once', async () => {
      const to = newNumber();
      const id = await strandedByDeadDispatcher(to, 'prepare');
      d.clock.advance(60_001);
      expect((await d.app.get(LeaseRecoveryService).recover()).requeued).toBe(1);
      expect(await entry(id)).toMatchObject({ status: 'pending', attempts: 0 });
      await d.drain.drain(2000);
      d.clock.advance(60_000);
      await d.drain.drain(2000);
      expect(await sandbox.received(to)).toHaveLength(1);
      expect(await entry(id)).toMatchObject({ status: 'accepted', attempts: 1 });
    });
  });

  describe('sweep', () => {
    const failing: Record<SweepStep, (x: Dispatcher) => { mockRejectedValueOnce(e: Error): { mockRestore(): void } }> = {
      probe: (x) => jest.spyOn(x.sweep, 'probe'),
      wake: (x) => jest.spyOn(x.sweep, 'wake'),
      recover: (x) => jest.spyOn(x.app.get(LeaseRecoveryService), 'recover'),
      drain: (x) => jest.spyOn(x.app.get(DrainService), 'drain'),
      prune: (x) => jest.spyOn(x.sweep, 'prune'),
    };

    it.each(SWEEP_STEPS.map((s) => [s]))('runs every other step when %s throws', async (step) => {
      const to = newNumber();
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      const spy = failing[step](d).mockRejectedValueOnce(new Error(`${step} exploded`));
      try {
        const report = await d.sweep.sweep();
        expect(report[step]).toEqual({ ok: false, error: `${step} exploded` });
        for (const other of SWEEP_STEPS.filter((s) => s !== step)) expect(report[other].ok).toBe(true);
      } finally {
        spy.mockRestore();
      }
      // Unless the drain itself was the step that failed, the sweep's backstop drain sent it.
      if (step !== 'drain') expect((await entry(entry_id)).status).toBe('accepted');
      d.clock.advance(7000);
    });

    it('prunes accepted after 30 days and failed after 90, never ambiguous, and orphan pairs', async () => {
      const accepted = await d.enqueue.enqueue(textTo(org, newNumber()));
      const failed = await d.enqueue.enqueue(textTo(org, newNumber()));
      const ambiguousTo = newNumber();
      await sandbox.fault({ kind: 'error', code: 131026, match: { wa_id: (await entry(failed.entry_id)).pacing_key } }, { kind: 'drop', match: { wa_id: ambiguousTo } });
      const ambiguous = await d.enqueue.enqueue(textTo(org, ambiguousTo));
      await d.drain.drain(2000);
      expect([(await entry(accepted.entry_id)).status, (await entry(failed.entry_id)).status, (await entry(ambiguous.entry_id)).status]).toEqual(['accepted', 'failed', 'ambiguous']);
      const pairOf = (await entry(accepted.entry_id)).pair_id;

      d.clock.advance(31 * 86_400_000);
      await d.sweep.prune();
      expect(await entry(accepted.entry_id)).toBeUndefined();
      expect(await entry(failed.entry_id)).toBeDefined();
      expect((await world.sql(`SELECT id FROM "${schema()}".message_outbox_pairs WHERE id = $1`, [pairOf])).length).toBe(0);

      d.clock.advance(60 * 86_400_000);
      await d.sweep.prune();
      expect(await entry(failed.entry_id)).toBeUndefined();
      expect((await entry(ambiguous.entry_id)).status).toBe('ambiguous');
    });

    it('sets the oldest-due-age gauge and the ambiguous count', async () => {
      await d.enqueue.enqueue(textTo(org, newNumber()));
      d.clock.advance(400_000);
      const probe = await d.sweep.probe();
      expect(probe.oldestDueAgeMs).toBeGreaterThanOrEqual(400_000);
      expect(probe.ambiguous).toBeGreaterThanOrEqual(1);
      const metrics = await (await fetch(`${(await d.app.getUrl()).replace('[::1]', '127.0.0.1')}/metrics`)).text();
      expect(metrics).toMatch(/touchpoint_outbox_oldest_due_age_seconds\{[^}]*\} (\d+)/);
      expect(metrics).toContain('touchpoint_outbox_sends_total');
      await d.drain.drain(2000);
    });
  });
});
