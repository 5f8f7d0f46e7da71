// Vite's configuration for the operator console (apps/console). `npm run build` (scripts/build.mjs)
// builds it into dist/console, which the gateway serves at /console; `npx vite apps/console` serves
// it for development (point its /sessions and API calls at a running gateway with a proxy of your own).
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  // Every asset URL is absolute under /console/, where the gateway serves the build.
  base: '/console/',
  // Vite 8 compiles TSX with oxc; the automatic runtime needs no React import in each file.
  oxc: { jsx: { runtime: 'automatic' } },
  build: { target: 'es2022', sourcemap: true, reportCompressedSize: false, chunkSizeWarningLimit: 1024 },
  logLevel: 'warn',
});
