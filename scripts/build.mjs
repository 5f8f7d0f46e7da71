#!/usr/bin/env node
// Compiles the TypeScript of apps/, libs/ and scripts/ to plain ES modules in dist/ with swc (the
// same compiler and decorator settings as .swcrc and jest), rewriting `@touchpoint/<lib>` imports
// to relative paths. Services run from dist/ in `npm start` and in the container image: loading the
// TypeScript compiler into every process at run time (what `--import @swc-node/register` does)
// costs about 100 MB of resident memory per service and a slower start.
//
// The operator console (apps/console, a browser app) is not compiled by swc: Vite bundles it into
// dist/console, which the gateway serves at /console. Its bundle is cached by a hash of its sources
// and the lock file, so a build that changed no console file copies the cached bundle.
//
// Usage: node scripts/build.mjs   (or `npm run build`; `npm start` runs it first). Takes < 1 s, and a
// few seconds more when a console file changed.
import { transformFile } from '@swc/core';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['apps', 'libs', 'scripts'];
const SKIPPED_DIRS = new Set(['__tests__', 'node_modules']);
const isTest = (file) => /\.(e2e-)?spec\.ts$/.test(file);
/** The browser app, bundled by Vite instead of compiled file by file. */
const CONSOLE_DIR = path.join(root, 'apps', 'console');

async function* walk(dir) {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name) && full !== CONSOLE_DIR) yield* walk(full);
    } else yield full;
  }
}

/** A source file swc could not compile; the message carries swc's own diagnosis. */
export class BuildError extends Error {
  constructor(file, cause) {
    super(
      `cannot compile ${file}:\n${String(cause?.message ?? cause)
        .replace(/\n\s*Caused by:[\s\S]*$/, '')
        .trim()}`,
    );
    this.name = 'BuildError';
  }
}

/** swc options: .swcrc plus the tsconfig path alias, resolved to relative `.js` imports. */
async function swcOptions() {
  const swcrc = JSON.parse(await readFile(path.join(root, '.swcrc'), 'utf8'));
  delete swcrc.$schema;
  return {
    ...swcrc,
    swcrc: false,
    sourceMaps: true,
    jsc: { ...swcrc.jsc, baseUrl: root, paths: { '@touchpoint/*': ['./libs/*/src/index.ts'] } },
    module: { ...swcrc.module, type: 'es6', resolveFully: true },
  };
}

/** Runs a command; resolves with its exit code and its output (stdout and stderr). */
function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: 1, output: `${output}${err.message}` }));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** A hash of every file of apps/console and of the lock file: what the console bundle depends on. */
async function consoleSourceHash() {
  const hash = createHash('sha256');
  const files = [];
  for await (const file of walk(CONSOLE_DIR)) files.push(file);
  for (const file of [...files.sort(), path.join(root, 'package-lock.json')]) {
    hash.update(path.relative(root, file)).update('\0');
    hash.update(await readFile(file).catch(() => Buffer.alloc(0))).update('\0');
  }
  return hash.digest('hex').slice(0, 24);
}

/**
 * Writes the console's bundle to `target`: from the cache when its sources did not change, else
 * built by Vite (apps/console/vite.config.mjs) into the cache first.
 */
async function buildConsole(cache, target) {
  const bundles = path.join(cache, 'console');
  const bundle = path.join(bundles, await consoleSourceHash());
  const cached = await stat(path.join(bundle, 'index.html')).then(
    () => true,
    () => false,
  );
  if (!cached) {
    const building = `${bundle}.building-${process.pid}`;
    // In a child process: Vite sets NODE_ENV=production in the process that builds, and `npm start`
    // builds in the orchestrator, whose environment every service inherits.
    const vite = path.join(root, 'node_modules', 'vite', 'bin', 'vite.js');
    const result = await run(process.execPath, [vite, 'build', '--config', path.join(CONSOLE_DIR, 'vite.config.mjs'), '--outDir', building, '--emptyOutDir']);
    if (result.code !== 0) {
      await rm(building, { recursive: true, force: true });
      throw new BuildError('apps/console', new Error(result.output.trim() || `vite exited with ${result.code}`));
    }
    // Another build may have finished the same bundle first; either copy is complete.
    await rename(building, bundle).catch(() => rm(building, { recursive: true, force: true }));
    const stale = (await readdir(bundles)).filter((name) => !name.startsWith(path.basename(bundle)) && !name.includes('.building-'));
    await Promise.all(stale.map((name) => rm(path.join(bundles, name), { recursive: true, force: true })));
  }
  await cp(bundle, target, { recursive: true });
}

/**
 * Builds everything into `<root>/dist`. The new tree is written beside the old one and swapped in
 * by rename, so a process already running from dist/ keeps a complete tree.
 * @returns the number of compiled files
 */
export async function build() {
  const options = await swcOptions();
  // Staging and discarded trees live in node_modules/.cache (ignored by git, same file system).
  const cache = path.join(root, 'node_modules', '.cache', 'touchpoint-build');
  await mkdir(cache, { recursive: true });
  const staging = path.join(cache, `staging-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  let compiled = 0;
  for (const top of SOURCE_DIRS) {
    for await (const file of walk(path.join(root, top))) {
      const relative = path.relative(root, file);
      if (file.endsWith('.d.ts') || isTest(file)) continue;
      if (file.endsWith('.ts')) {
        const target = path.join(staging, relative.replace(/\.ts$/, '.js'));
        let output;
        try {
          output = await transformFile(file, { ...options, filename: file, sourceFileName: path.relative(path.dirname(target), file) });
        } catch (err) {
          throw new BuildError(relative, err);
        }
        await mkdir(path.dirname(target), { recursive: true });
        await writeFile(target, `${output.code}\n//# sourceMappingURL=${path.basename(target)}.map\n`);
        if (output.map) await writeFile(`${target}.map`, output.map);
        compiled++;
      } else if (top !== 'scripts') {
        // Assets next to the code (JSON, templates) are read at run time relative to it.
        await mkdir(path.dirname(path.join(staging, relative)), { recursive: true });
        await cp(file, path.join(staging, relative));
      }
    }
  }
  await buildConsole(cache, path.join(staging, 'console'));
  await writeFile(path.join(staging, 'package.json'), '{ "type": "module" }\n');
  const dist = path.join(root, 'dist');
  const old = path.join(cache, `old-${process.pid}`);
  // Two builds may finish together (parallel test files, two terminals): whoever finds dist/
  // re-created between its two renames moves it aside again. Both trees are complete.
  for (let attempt = 1; ; attempt++) {
    await rename(dist, `${old}-${attempt}`).catch(() => undefined);
    try {
      await rename(staging, dist);
      break;
    } catch (err) {
      if (attempt >= 10 || !['ENOTEMPTY', 'EEXIST'].includes(err.code)) throw err;
    }
  }
  const leftovers = (await readdir(cache)).filter((name) => name.startsWith(path.basename(old)));
  await Promise.all(leftovers.map((name) => rm(path.join(cache, name), { recursive: true, force: true })));
  return compiled;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = Date.now();
  try {
    const count = await build();
    process.stderr.write(`touchpoint: built ${count} files into dist/ in ${Date.now() - started} ms\n`);
  } catch (err) {
    process.stderr.write(`touchpoint: ${err instanceof BuildError ? err.message : err.stack}\n`);
    process.exit(1);
  }
}
