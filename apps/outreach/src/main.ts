import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { OutreachConfig } from './outreach.config.js';
import { OutreachModule } from './outreach.module.js';

await runMain('outreach', () => startService(OutreachModule.forRoot(loadConfig(OutreachConfig))));
