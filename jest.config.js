/**
 * Jest in native ESM mode (run with --experimental-vm-modules), TypeScript compiled by @swc/jest
 * with legacy decorators and decorator metadata, as NestJS needs.
 */
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    target: 'es2023',
    keepClassNames: true,
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper: {
    // Its ES build imports JSON without an import attribute, which Jest's ESM loader warns about on
    // every file; the CommonJS build is the same code.
    '^libphonenumber-js$': '<rootDir>/node_modules/libphonenumber-js/index.cjs',
    '^@touchpoint/([a-z-]+)$': '<rootDir>/libs/$1/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test'],
  // `*.browser-spec.ts`: the operator console in headless Chromium (test/console); `npm run
  // test:console` runs only those.
  testMatch: ['**/?(*.)+(spec|e2e-spec|browser-spec).ts'],
  globalSetup: '<rootDir>/test/global-setup.js',
  testTimeout: 60000,
  // The suite runs one file at a time on 2 cores. In band, every file's ES modules stay in the one
  // process and the heap only grows: files late in the run took 5-10x as long as alone. A worker
  // whose heap passes this after a file is replaced by a fresh one, with the same one-at-a-time order.
  workerIdleMemoryLimit: '1GB',
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
};
