#!/usr/bin/env node
// `npm start` (after `prestart` installed the dependencies): compiles the TypeScript into dist/
// (scripts/build.mjs, under a second) and hands over to the orchestrator it just compiled,
// scripts/start/main.ts. See that file and README.md "Quick start".
import { build, BuildError } from './build.mjs';

try {
  await build();
} catch (err) {
  if (!(err instanceof BuildError)) throw err;
  process.stderr.write(`npm start: ${err.message}\n`);
  process.exit(1);
}
await import('../dist/scripts/start/main.js');
