import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { runMain } from '@touchpoint/runtime';
import { startGateway } from './gateway.app.js';
import { GatewayConfig } from './gateway.config.js';

await runMain('gateway', () => startGateway(loadConfig(GatewayConfig)));
