import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { eventually } from '@touchpoint/testing';
import { ExecutionRunner } from '../../apps/outreach/src/execution/execution.runner.js';
import { RunnerService } from '../../apps/outreach/src/runners/runner.service.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/** The lease of this world, ms: short, so a run outlives several of them. */
const LEASE_MS = 1500;

/**
 * The runners' lease (issue 17: a run a killed process held waited 180 s): renewed while the run
 * works, so a slow run is never taken over by another loop, and a run whose runner died is taken
 * over within one lease. Real PostgreSQL and RabbitMQ; the execution handler is made slow here.
 */
describe(`${RunnerService.name} lease`, () => {
  let w: OutreachWorld;
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_lease', { outreachEnv: { OUTREACH_RUN_LEASE_MS: String(LEASE_MS), OUTREACH_SWEEP_INTERVAL_MS: '0' } });
  });
  afterAll(() => w.close());
  afterEach(() => jest.restoreAllMocks());

  const insertRun = async (status: 'queued' | 'running', leaseUntil: Date | null, attempts: number) => {
    const key = `lease-test:${randomUUID()}`;
    await w.sql(`INSERT INTO {o}.workflow_runs (run_key, kind, organization_id, subject_id, input, status, attempts, fence, run_after, lease_until, created_at) VALUES ($1, 'execution', $2, $3, $4, $5, $6, $6, now(), $7, now())`, [
      key,
      org,
      'action-x',
      JSON.stringify({ action_id: 'action-x', enrollment_id: 'enrollment-x' }),
      status,
      attempts,
      leaseUntil,
    ]);
    return key;
  };
  const runOf = async (key: string) => (await w.sql(`SELECT status, attempts, lease_until FROM {o}.workflow_runs WHERE run_key = $1`, [key]))[0]!;

  it('renews the lease of a run that works longer than it, so no other loop takes the run over', async () => {
    const executions = w.outreach.get(ExecutionRunner);
    const slow = jest.spyOn(executions, 'execute').mockImplementation(() => new Promise((resolve) => setTimeout(resolve, LEASE_MS * 3)));
    const key = await insertRun('queued', null, 0);
    w.outreach.get(RunnerService).wake();

    const first = await eventually(async () => {
      const r = await runOf(key);
      return r.status === 'running' ? r : null;
    }, 10_000);
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 2));
    const during = await runOf(key);

    expect(during).toMatchObject({ status: 'running', attempts: 1 });
    expect(new Date(during.lease_until as string).getTime()).toBeGreaterThan(new Date(first.lease_until as string).getTime());
    const done = await eventually(async () => {
      const r = await runOf(key);
      return r.status === 'done' ? r : null;
    }, 10_000);
    expect(done.attempts).toBe(1);
    expect(slow).toHaveBeenCalledTimes(1);
  }, 30_000);

  it('takes over, within one lease, a run whose runner stopped renewing it (its process died)', async () => {
    jest.spyOn(w.outreach.get(ExecutionRunner), 'execute').mockResolvedValue(undefined);
    // Claimed by a runner that died just now: its lease runs out LEASE_MS from now.
    const key = await insertRun('running', new Date(Date.now() + LEASE_MS), 1);

    const done = await eventually(async () => {
      const r = await runOf(key);
      return r.status === 'done' ? r : null;
    }, LEASE_MS + 5_000);

    expect(done.attempts).toBe(2);
  }, 30_000);
});
