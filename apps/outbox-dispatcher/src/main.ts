import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { OutboxDispatcherConfig } from './outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from './outbox-dispatcher.module.js';

await runMain('outbox-dispatcher', () => startService(OutboxDispatcherModule.forRoot(loadConfig(OutboxDispatcherConfig))));
