import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { MessagingConfig } from './messaging.config.js';
import { MessagingModule } from './messaging.module.js';

await runMain('messaging', () => startService(MessagingModule.forRoot(loadConfig(MessagingConfig))));
