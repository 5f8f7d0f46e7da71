// ESLint's flat config (`npm run lint`; `npm test` runs it too, in test/lint/lint.spec.ts). Syntax-only rules: no
// rule needs type information, so the whole repository lints in seconds (`npm run typecheck` is the
// type check). Formatting is prettier's job (.prettierrc.json); no rule here is about layout.
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** Every app under apps/ (one folder each); a new app is covered by the boundaries below as it is added. */
const APPS = readdirSync(new URL('./apps/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

/** Escapes a folder or file name for use inside a regular expression. */
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What the admin CLI may import from another app (STYLE, Layout: an app never imports another app).
 * It runs every service's migrations, and the organization, member and API-key commands call the
 * gateway's own services on the gateway's schema instead of a copy of their rules. Paths are inside
 * `apps/<app>/src/`, as written in the import (`.js`).
 */
const CLI_IMPORTS_FROM_APPS = {
  ...Object.fromEntries(APPS.filter((app) => app !== 'cli').map((app) => [app, ['migrations/index.js']])),
  gateway: ['migrations/index.js', 'accounts/accounts.module.js', 'api-keys/api-keys.service.js', 'members/members.service.js', 'organizations/organizations.service.js'],
};

/**
 * `no-restricted-imports` patterns for a file of `apps/<app>/`: a relative import that reaches into
 * another app's `src/` (allowed: that app's `allowed` files), or into `libs/` (import `@touchpoint/<lib>`).
 */
function appBoundaries(app, allowedFrom = {}) {
  const others = APPS.filter((other) => other !== app);
  const patterns = others.map((other) => {
    const allowed = allowedFrom[other] ?? [];
    const except = allowed.length > 0 ? `(?!(${allowed.map(escape).join('|')})$)` : '';
    return {
      regex: `(^|/)${escape(other)}/src/${except}`,
      message: `an app never imports another app (STYLE, Layout): move what ${app} and ${other} share into libs/, or send it over the bus.`,
    };
  });
  patterns.push({ regex: '(^|/)libs/[^/]+/src(/|$)', message: 'import a lib by its name, @touchpoint/<lib>.' });
  return patterns;
}

/**
 * Test and demo files written before the no-`any` rule, that still read rows and JSON bodies as
 * `Record<string, any>` / `body: any`: typing them is left to the files' owners (each becomes a
 * row or body type, or `unknown` where nothing is dug into). Remove a file from this list once it
 * is typed; a new file cannot join it. apps/ and libs/ hold no `any`.
 */
const STILL_UNTYPED_TEST_FILES = ['scripts/demo/demo-context.ts', 'scripts/demo/followups-scenarios.ts', 'scripts/demo/http-clients.ts', 'scripts/demo/outreach-scenario.ts', 'test/deploy/manifests.spec.ts', 'test/gateway/gateway-world.ts', 'test/outreach/outreach-world.ts'];

const PROCESS_ENV = 'read configuration through the app\'s config class (STYLE, Code: "Config is one validated class per app; nothing reads process.env elsewhere").';

/** `no-restricted-imports` with these patterns, and everywhere: no `env` imported from node:process. */
function restrictedImports(patterns = []) {
  const paths = ['node:process', 'process'].map((name) => ({ name, importNames: ['env'], message: PROCESS_ENV }));
  return ['error', { paths, patterns }];
}

export default defineConfig(
  // The console's API types are generated (`npm run console:client`).
  { ignores: ['node_modules/', 'dist/', 'coverage/', '.touchpoint/', 'test-artifacts/', 'apps/console/src/api/schema.ts'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // `let { a, ...rest } = row` where only `a` is reassigned stays one statement.
      'prefer-const': ['error', { destructuring: 'all' }],
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: PROCESS_ENV }],
      'no-restricted-imports': restrictedImports(),
    },
  },
  // Config classes read the environment; so do the orchestrator, the demo, the benchmarks and the
  // test set-up, which pass it on to the processes they start.
  {
    files: ['**/*.config.ts', 'libs/config/**', 'libs/testing/**', 'scripts/**', 'test/**', '*.config.js'],
    rules: { 'no-restricted-properties': 'off' },
  },
  { files: STILL_UNTYPED_TEST_FILES, rules: { '@typescript-eslint/no-explicit-any': 'off' } },
  ...APPS.map((app) => ({
    files: [`apps/${app}/**`],
    rules: { 'no-restricted-imports': restrictedImports(appBoundaries(app, app === 'cli' ? CLI_IMPORTS_FROM_APPS : {})) },
  })),
  // The operator console runs in the browser: browser globals, not Node's; it talks to the platform
  // only through its generated API client, so it imports no lib either (DESIGN §1).
  {
    files: ['apps/console/src/**'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': restrictedImports([...appBoundaries('console'), { regex: '^@touchpoint/', message: 'the console talks to the platform only through its generated API client (DESIGN §1).' }, { regex: '^node:', message: 'the console runs in the browser.' }]),
    },
  },
  {
    files: ['libs/**'],
    rules: {
      'no-restricted-imports': restrictedImports([{ regex: `(^|/)apps/|(^|/)(${APPS.map(escape).join('|')})/src(/|$)`, message: 'a lib never imports an app (STYLE, Layout: libs hold only what two or more apps share).' }]),
    },
  },
);
