import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { TestWorld } from '@touchpoint/testing';
import type { Clock } from '@touchpoint/time';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';

/** Starts followups in a test world (release loop off unless asked: tests drive it by hand). */
export function startFollowups(world: TestWorld, options: { clock?: Clock; env?: Record<string, string> } = {}): Promise<NestFastifyApplication> {
  const config = world.config(FollowupsConfig, { FOLLOWUP_RELEASE_ENABLED: 'false', FOLLOWUP_SENDER_GAP_MS: '0', ...options.env });
  return world.start(FollowupsModule.forRoot(config, { clock: options.clock }));
}
