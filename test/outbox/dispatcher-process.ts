/**
 * A real dispatcher process for the multi-process tests: started with the test world's
 * environment, it drains on its own until the test kills it.
 */
import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';

await runMain('outbox-dispatcher', async () => {
  const app = await startService(OutboxDispatcherModule.forRoot(loadConfig(OutboxDispatcherConfig)));
  process.stdout.write('DISPATCHER_READY\n');
  return app;
});
