import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { FollowupsConfig } from './followups.config.js';
import { FollowupsModule } from './followups.module.js';

await runMain('followups', () => startService(FollowupsModule.forRoot(loadConfig(FollowupsConfig))));
