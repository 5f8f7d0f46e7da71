/**
 * Child process of bench/bus.ts: the consuming service (followups with the probe handler) in the
 * bench's world. Prints "ready" on stdout once consuming.
 */
import 'reflect-metadata';
import { loadConfig, ServiceConfig } from '@touchpoint/config';
import { startService } from '@touchpoint/runtime';
import { probeService } from '../bus/probe.js';

const app = await startService(probeService('followups', loadConfig(ServiceConfig), true));
process.stdout.write('ready\n');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
