#!/usr/bin/env node
// Compiles the TypeScript of apps/, libs/ and scripts/ to plain ES modules in dist/ with swc (the
// same compiler and decorator settings as .swcrc and jest), rewriting `@touchpoint/<lib>` imports
// to relative paths. Services run from dist/ in `npm start` and in the container image: loading the
// TypeScript compiler into every process at run time (what `--import @swc-node/register` does)
// costs about 100 MB of resident memory per service and a slower start.
//
// Usage: node scripts/build.mjs   (or `npm run build`; `npm start` runs it first). Takes < 1 s.
import { transformFile } from '@swc/core';
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['apps', 'libs', 'scripts'];
const SKIPPED_DIRS = new Set(['__tests__', 'node_modules']);
const isTest = (file) => /\.(e2e-)?spec\.ts$/.test(file);

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
      if (!SKIPPED_DIRS.has(entry.name)) yield* walk(full);
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
