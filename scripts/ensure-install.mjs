#!/usr/bin/env node
// Runs before `npm start` and `npm test` (the `prestart` / `pretest` scripts), so it may use only
// Node's builtins: on a fresh clone nothing else is installed yet.
//
// Installs the locked dependency tree with `npm ci` when node_modules is missing, or when
// package-lock.json changed after the last install. npm rewrites node_modules/.package-lock.json
// on every install, right after package-lock.json, so comparing the two modification times tells
// whether the installed tree predates the lock file.
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Modification time in ms, or undefined when the file does not exist. */
function mtimeOf(file) {
  try {
    return statSync(path.join(root, file)).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Why an install is needed, or undefined when the installed tree matches the lock file. */
function installReason() {
  const lock = mtimeOf('package-lock.json');
  const installed = mtimeOf('node_modules/.package-lock.json');
  if (installed === undefined) return 'node_modules is missing';
  if (lock !== undefined && lock > installed) return 'package-lock.json is newer than node_modules';
  return undefined;
}

const reason = installReason();
if (reason) {
  // Only errors: the peer-range warnings of a clean install would bury the first screen.
  process.stderr.write(`touchpoint: ${reason}; running npm ci\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    process.stderr.write(`touchpoint: npm ci failed (exit ${result.status ?? result.signal}); fix the error above and run it again\n`);
    process.exit(result.status || 1);
  }
}
