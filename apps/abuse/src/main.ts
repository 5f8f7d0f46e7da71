import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { AbuseConfig } from './abuse.config.js';
import { AbuseModule } from './abuse.module.js';

await runMain('abuse', () => startService(AbuseModule.forRoot(loadConfig(AbuseConfig))));
