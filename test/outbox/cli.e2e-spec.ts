import { randomUUID } from 'node:crypto';
import type { ErrorEnvelope } from '@touchpoint/errors';
import { aWhatsAppNumber, createTestWorld, runCli, type TestWorld } from '@touchpoint/testing';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

/** The admin CLI's triage of ambiguous sends (DESIGN §8), against a running dispatcher. */
describe('outbox CLI', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let org: string;
  let entryId: string;

  beforeAll(async () => {
    world = await createTestWorld('outbox_cli');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox);
    org = `org-${randomUUID()}`;
    await aWhatsAppNumber(d, org, '100000000000002');
    await sandbox.fault({ kind: 'drop' });
    entryId = (await d.enqueue.enqueue(textTo(org, '5511966660001'))).entry_id;
    await d.drain.drain(3000);
  }, 60_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  it('lists the ambiguous entry, refuses a resolution without a note, and resolves it with one', async () => {
    const list = await runCli<{ items: { id: string; status: string }[] }>(world, ['outbox:ambiguous:list', '--org', org, '--json']);
    expect(list.code).toBe(0);
    expect(list.json.items.map((e: { id: string; status: string }) => [e.id, e.status])).toEqual([[entryId, 'ambiguous']]);

    const noNote = await runCli<ErrorEnvelope>(world, ['outbox:ambiguous:resolve', '--id', entryId, '--status', 'accepted', '--note', ' ', '--json']);
    expect(noNote.code).toBe(1);
    expect(noNote.json.error.code).toBe('validation_failed');

    const resolved = await runCli(world, ['outbox:ambiguous:resolve', '--id', entryId, '--status', 'rejected', '--note', 'customer says nothing arrived', '--actor', 'ops', '--json']);
    expect(resolved.code).toBe(0);
    expect(resolved.json).toEqual({ outcome: 'resolved_failed', entry_id: entryId, status: 'failed' });
    const [row] = await world.sql<{ status: string; resolution_note: string; resolved_by: string }>(`SELECT status, resolution_note, resolved_by FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE id = $1`, [entryId]);
    expect(row).toEqual({ status: 'failed', resolution_note: 'customer says nothing arrived', resolved_by: 'operator:ops' });

    const again = await runCli<{ outcome: string }>(world, ['outbox:ambiguous:resolve', '--id', entryId, '--status', 'accepted', '--note', 'x', '--json']);
    expect([again.code, again.json.outcome]).toEqual([1, 'not_ambiguous']);
  }, 60_000);
});
