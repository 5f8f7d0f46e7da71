// The gateway as `dist/apps/gateway/src/main.js` starts it (same module, same HTTP set-up), plus one
// bare Fastify route, `GET /bench/bare` → `{"ok":true}`, mounted on the same Fastify instance before
// it listens: it passes the gateway's Fastify hooks (request context and access log, security
// headers) but no Nest guard, pipe, controller or RPC. `bench:gateway` (test/bench/gateway.ts) runs
// it to measure the forwarded reads beside the bare route of the same process. Run from the repo
// root after `node scripts/build.mjs`.
import 'reflect-metadata';
import { loadConfig } from '../../dist/libs/config/src/index.js';
import { runMain, startService } from '../../dist/libs/runtime/src/index.js';
import { gatewayStartOptions } from '../../dist/apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../dist/apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../dist/apps/gateway/src/gateway.module.js';

await runMain('gateway', () => {
  const config = loadConfig(GatewayConfig);
  const options = gatewayStartOptions(config);
  return startService(GatewayModule.forRoot(config), {
    ...options,
    configure: async (app) => {
      await options.configure?.(app);
      app
        .getHttpAdapter()
        .getInstance()
        .get('/bench/bare', async () => ({ ok: true }));
    },
  });
});
