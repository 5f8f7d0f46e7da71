import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { OutreachConfig } from '../../apps/outreach/src/outreach.config.js';
import { OutreachModule } from '../../apps/outreach/src/outreach.module.js';

/**
 * A service that has just started, before anything happened, already exports at 0 every labelled
 * counter series an alert reads with `increase()` (deploy/prometheus/alerts.yml). A series that
 * appears with its first event has no earlier sample, so the increase would be 0 and the alert
 * would miss exactly the event it exists for.
 */
describe('/metrics on a fresh start', () => {
  let world: TestWorld;
  const apps: Record<string, NestFastifyApplication> = {};
  const scrape = async (service: string) => (await fetch(`${await apps[service]!.getUrl()}/metrics`)).text();
  /** The value of one sample (`name{labels} value`), labels given in any order; undefined when absent. */
  const sample = (text: string, name: string, labels: Record<string, string>) => {
    for (const line of text.split('\n')) {
      const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
      if (!match || match[1] !== name) continue;
      const got = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(match[3]);
    }
    return undefined;
  };

  beforeAll(async () => {
    world = await createTestWorld('fresh_metrics');
    const quiet = { OUTCOME_SWEEP_INTERVAL_MS: '0', INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' };
    apps.messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, quiet)));
    apps.followups = await world.start(FollowupsModule.forRoot(world.config(FollowupsConfig)));
    apps.outreach = await world.start(OutreachModule.forRoot(world.config(OutreachConfig)));
    apps['outbox-dispatcher'] = await world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { OUTBOX_DRAIN_AUTOSTART: 'false' })));
  }, 120_000);
  afterAll(() => world.close());

  it.each([
    ['messaging', 'touchpoint_bus_dead_lettered_total', { service: 'messaging', reason: 'handler_failed' }],
    ['messaging', 'touchpoint_bus_dead_lettered_total', { service: 'messaging', reason: 'no_handler' }],
    ['messaging', 'touchpoint_bus_dead_lettered_total', { service: 'messaging', reason: 'unreadable' }],
    ['messaging', 'touchpoint_bus_retried_total', { service: 'messaging', handler: 'OutcomesConsumer.onAccepted' }],
    ['messaging', 'touchpoint_bus_consumed_total', { service: 'messaging', handler: 'OutcomesConsumer.onAccepted', outcome: 'failed' }],
    ['messaging', 'touchpoint_messaging_outcome_sweep_steps_total', { step: 'persist', result: 'error' }],
    ['messaging', 'touchpoint_messaging_abuse_check_failures_total', { outcome: 'fail_closed' }],
    ['followups', 'touchpoint_followup_triggers_total', { service: 'followups', type: 'tag_added', outcome: 'failed' }],
    ['followups', 'touchpoint_followup_releases_total', { service: 'followups', outcome: 'failed' }],
    ['followups', 'touchpoint_bus_dead_lettered_total', { service: 'followups', reason: 'handler_failed' }],
    ['outreach', 'touchpoint_outreach_sweep_passes_total', { service: 'outreach', outcome: 'failed' }],
    ['outbox-dispatcher', 'touchpoint_outbox_sends_total', { service: 'outbox-dispatcher', channel: 'whatsapp', outcome: 'failed', classification: 'account_restricted' }],
    ['outbox-dispatcher', 'touchpoint_bus_retried_total', { service: 'outbox-dispatcher' }],
  ] as const)('%s exports %s %j at 0', async (service, name, labels) => {
    expect(sample(await scrape(service), name, labels)).toBe(0);
  });

  it('names the dead-letter queue the bus really parks messages in', async () => {
    const text = await scrape('messaging');
    const queues = [...text.matchAll(/^touchpoint_bus_dead_lettered_total\{[^}]*queue="([^"]+)"/gm)].map((m) => m[1]);
    expect(new Set(queues).size).toBe(1);
    expect(queues[0]).toMatch(/\.messaging\.dlq$/);
  });
});
