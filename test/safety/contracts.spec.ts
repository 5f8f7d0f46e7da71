import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LEAVES_PLATFORM } from '@touchpoint/contracts';
import { busConsumers, declaredMessages } from './bus-consumers.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * DESIGN §2: every event and command declared in libs/contracts has a consumer in a service, or is
 * declared as leaving the platform (`LEAVES_PLATFORM`, with its reason). A STOP once suppressed
 * nothing because `messaging.suppression.requested` had no consumer; this keeps the next one out.
 */
describe('libs/contracts messages', () => {
  const declared = declaredMessages();
  const { consumers, unresolved } = busConsumers(ROOT);
  const handled = new Set(consumers.map((c) => c.type));

  // `messaging.inbound.acknowledged`: the reply hold (issue 17) is consumed by the dispatcher.
  it('declares at least the messages the send and stop paths travel on (the reader found them)', () => {
    const types = declared.map((d) => d.type);
    expect(types).toEqual(expect.arrayContaining(['messaging.send', 'outbox.enqueue', 'outbox.entry.accepted', 'messaging.message.received', 'messaging.suppression.requested', 'messaging.inbound.acknowledged']));
    expect(consumers.length).toBeGreaterThan(20);
  });

  it('every declared event and command has a consumer in apps/ or leaves the platform', () => {
    const orphans = declared.filter((d) => !handled.has(d.type) && !(d.type in LEAVES_PLATFORM)).map((d) => `${d.type} (${d.declaredAs})`);
    expect(orphans).toEqual([]);
  });

  it('every LEAVES_PLATFORM entry is a declared message that no service consumes, with a reason', () => {
    const types = new Set(declared.map((d) => d.type));
    const stale = Object.entries(LEAVES_PLATFORM)
      .filter(([type, reason]) => !types.has(type) || handled.has(type) || reason.trim().length < 10)
      .map(([type]) => `${type}: ${!types.has(type) ? 'not declared' : handled.has(type) ? `consumed in ${consumers.find((c) => c.type === type)!.file}` : 'no reason'}`);
    expect(stale).toEqual([]);
  });

  it('every handler the services declare is for a message libs/contracts declares (no private wire names)', () => {
    const types = new Set(declared.map((d) => d.type));
    // A service's wake-up to itself may stay private to it (a local constant the reader cannot resolve).
    const undeclared = consumers.filter((c) => !types.has(c.type)).map((c) => `${c.type} in ${c.file}`);
    expect(undeclared).toEqual([]);
    expect(unresolved.map((u) => u.expression)).toEqual(['DISPATCH_WAKE']);
  });
});
