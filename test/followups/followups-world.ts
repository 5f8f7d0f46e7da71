import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import amqplib from 'amqplib';
import { randomUUID } from 'node:crypto';
import { type BusMessage, type FlowGraph, type FlowSettings, OutboxEvents } from '@touchpoint/contracts';
import { eventually, type TestWorld } from '@touchpoint/testing';
import type { Clock } from '@touchpoint/time';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';

/** Starts followups in a test world (release loop off unless asked: tests drive it by hand). */
export function startFollowups(world: TestWorld, options: { clock?: Clock; env?: Record<string, string> } = {}): Promise<NestFastifyApplication> {
  const config = world.config(FollowupsConfig, { FOLLOWUP_RELEASE_ENABLED: 'false', FOLLOWUP_SENDER_GAP_MS: '0', ...options.env });
  return world.start(FollowupsModule.forRoot(config, { clock: options.clock }));
}

/**
 * Publishes an event on the world's bus as its owner would (messaging, the dispatcher), so the
 * followups consumers receive it through the broker like any other.
 */
export async function publishEvent<T>(world: TestWorld, type: string, organizationId: string, data: T, occurredAt = new Date()): Promise<BusMessage<T>> {
  const message: BusMessage<T> = { event_id: randomUUID(), type, organization_id: organizationId, occurred_at: occurredAt.toISOString(), data };
  const connection = await amqplib.connect(world.amqpUrl);
  try {
    const channel = await connection.createConfirmChannel();
    channel.publish(`${world.namespace}.events`, type, Buffer.from(JSON.stringify(message)), { persistent: true, messageId: message.event_id, contentType: 'application/json', type });
    await channel.waitForConfirms();
    await channel.close();
  } finally {
    await connection.close();
  }
  return message;
}

/** The seed example graph's shape, as builders of small flows for engine tests. */
export const HOUR = 3_600_000;

/** Settings of a manual flow whose window is always open (engine tests that are not about the window). */
export const ALWAYS_OPEN = { send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' };

/** trigger → text "Oi" → end, manual, window always open: the smallest flow that sends. */
export const ONE_TEXT_FLOW: { graph: FlowGraph; settings: FlowSettings } = {
  graph: {
    nodes: [
      { id: 't', type: 'trigger', config: {} },
      { id: 'a', type: 'action', config: { mode: 'text', body: 'Oi' } },
      { id: 'e', type: 'end', config: {} },
    ],
    edges: [
      { id: 'e1', source: 't', target: 'a', condition: { type: 'always' } },
      { id: 'e2', source: 'a', target: 'e', condition: { type: 'always' } },
    ],
  },
  settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN },
};

/** Tells followups (as the dispatcher would) that `sender` is the organization's connected default number, and waits until it knows. */
export async function connectSender(world: TestWorld, organizationId: string, sender: string): Promise<void> {
  await publishEvent(world, OutboxEvents.SenderConnected, organizationId, { sender_id: sender, channel: 'whatsapp', is_default: true, status: 'connected' });
  await eventually(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".senders WHERE sender_id = $1`, [sender])).length === 1);
}
