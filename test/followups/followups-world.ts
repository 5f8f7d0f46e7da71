import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { TestWorld } from '@touchpoint/testing';
import type { Clock } from '@touchpoint/time';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { type Dispatcher, type SandboxHandle, startDispatcher } from '../outbox/harness.js';

/** Starts followups in a test world (release loop off unless asked: tests drive it by hand). */
export function startFollowups(world: TestWorld, options: { clock?: Clock; env?: Record<string, string> } = {}): Promise<NestFastifyApplication> {
  const config = world.config(FollowupsConfig, { FOLLOWUP_RELEASE_ENABLED: 'false', FOLLOWUP_SENDER_GAP_MS: '0', ...options.env });
  return world.start(FollowupsModule.forRoot(config, { clock: options.clock }));
}

/** Followups with the real send path behind it (`startFollowupsWithSendPath`). */
export interface SendPathWorld {
  dispatcher: Dispatcher;
  messaging: NestFastifyApplication;
  followups: NestFastifyApplication;
}

/**
 * Starts, in `world`, the dispatcher talking to `sandbox` (drain by hand), abuse, messaging and
 * followups: a follow-up goes followups → messaging → outbox-dispatcher → the Meta sandbox.
 * `dispatcherEnv` and `followupsEnv` add to or override their test settings.
 */
export async function startFollowupsWithSendPath(world: TestWorld, sandbox: SandboxHandle, options: { clock?: Clock; dispatcherEnv?: Record<string, string>; followupsEnv?: Record<string, string> } = {}): Promise<SendPathWorld> {
  const dispatcher = await startDispatcher(world, sandbox, options.dispatcherEnv);
  await world.start(AbuseModule.forRoot(world.config(AbuseConfig, { ABUSE_EXPIRY_INTERVAL_MS: '0' })));
  const messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
  const followups = await startFollowups(world, { clock: options.clock, env: options.followupsEnv });
  return { dispatcher, messaging, followups };
}
