import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain, startService } from '@touchpoint/runtime';
import { AiGatewayConfig } from './ai-gateway.config.js';
import { AiGatewayModule } from './ai-gateway.module.js';

await runMain('ai-gateway', () => startService(AiGatewayModule.forRoot(loadConfig(AiGatewayConfig))));
