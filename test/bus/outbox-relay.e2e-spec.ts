import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { ServiceConfig } from '@touchpoint/config';
import { createTestWorld, duplicateCounts, eventually, type TestWorld, untilRedeliveryDiscarded } from '@touchpoint/testing';
import { probeService } from './probe.js';

describe('OutboxRelay', () => {
  let world: TestWorld;

  beforeAll(async () => {
    world = await createTestWorld('relay');
  });
  afterAll(() => world.close());

  const handledRows = async (eventId: string) => world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('followups')}".probe_handled WHERE event_id = $1`, [eventId]);

  it('publishes an event committed by a process killed before its relay ran, exactly once after restart', async () => {
    // The consumer (followups) is up; the producer (outreach) is not running yet.
    const consumer = await world.start(probeService('followups', world.config(ServiceConfig), true));
    const eventId = `crash-${randomUUID()}`;

    // A separate process migrates outreach, commits a business row + its event, then SIGKILLs itself.
    const child = spawn(process.execPath, ['--import', '@swc-node/register/esm-register', 'test/bus/crash-after-commit.ts', eventId], {
      env: { ...process.env, ...world.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
    expect({ signal, stderr: signal === 'SIGKILL' ? '' : stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });

    const outreach = world.schema('outreach');
    const [pending] = await world.sql<{ published_at: Date | null }>(`SELECT published_at FROM "${outreach}".outbox_events WHERE event_id = $1`, [eventId]);
    expect(pending.published_at).toBeNull();
    expect((await handledRows(eventId))[0].n).toBe(0);

    // "Restart": the producer service comes up and its relay finds the row.
    await world.start(probeService('outreach', world.config(ServiceConfig), false));
    await eventually(async () => (await handledRows(eventId))[0].n === 1);
    const [published] = await world.sql<{ published_at: Date | null }>(`SELECT published_at FROM "${outreach}".outbox_events WHERE event_id = $1`, [eventId]);
    expect(published.published_at).not.toBeNull();

    // A relay that dies after the broker confirmed but before marking the row publishes it again:
    // simulate by clearing published_at. The inbox keeps the handler at one run.
    const before = await duplicateCounts(consumer);
    await world.sql(`UPDATE "${outreach}".outbox_events SET published_at = NULL WHERE event_id = $1`, [eventId]);
    await world.sql(`SELECT pg_notify($1, '')`, [`outbox_${outreach}`]);
    await eventually(async () => {
      const [row] = await world.sql<{ published_at: Date | null }>(`SELECT published_at FROM "${outreach}".outbox_events WHERE event_id = $1`, [eventId]);
      return row.published_at !== null;
    });
    // Barrier: the consumer took the second publication and counted it a duplicate.
    await untilRedeliveryDiscarded(world, consumer, 'followups', eventId, before);
    expect((await handledRows(eventId))[0].n).toBe(1);
    const [inbox] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('followups')}".inbox_events WHERE event_id = $1`, [eventId]);
    expect(inbox.n).toBe(1);
  });
});
