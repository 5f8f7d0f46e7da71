import 'reflect-metadata';
import { loadConfig } from '@touchpoint/config';
import { SandboxConfig } from './sandbox.config.js';
import { startSandbox } from './sandbox.app.js';

try {
  await startSandbox(loadConfig(SandboxConfig));
} catch (err) {
  process.stderr.write(`sandbox: ${(err as Error).message}\n`);
  process.exit(1);
}
