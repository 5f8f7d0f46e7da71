import { execFileSync } from 'node:child_process';

/** Jest global setup: prepares the test database in a child process that can load our TypeScript. */
export default function globalSetup() {
  execFileSync(process.execPath, ['--import', '@swc-node/register/esm-register', 'test/prepare-test-database.ts'], { stdio: 'inherit' });
}
