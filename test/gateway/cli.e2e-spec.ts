import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import amqplib from 'amqplib';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { BusNames } from '@touchpoint/bus';
import { ServiceConfig } from '@touchpoint/config';
import { UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, eventually, runCli, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { probeControl, probeEvent, probeService } from '../bus/probe.js';
import { gatewayTable, httpClient } from './gateway-world.js';

/** What a command printed with `--json`: its result, or an error envelope (the fields these tests read). */
type CliJson = { id: string; organization_id: string; member_id: string; api_key_id: string; secret: string; migrated: Record<string, unknown>; error: { code: string } };

describe('admin CLI', () => {
  let world: TestWorld;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;

  beforeAll(async () => {
    world = await createTestWorld('cli');
  });
  afterAll(() => world.close());

  describe('migrate', () => {
    it("runs every service's migrations, then nothing the second time", async () => {
      const first = await runCli<CliJson>(world, ['migrate', '--json']);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(Object.keys(first.json.migrated).sort()).toEqual(['abuse', 'ai-gateway', 'followups', 'gateway', 'messaging', 'outbox-dispatcher', 'outreach']);
      expect(first.json.migrated.gateway).toEqual(['CreateBusTables1764460000000', 'AddOutboxNotifyTrigger1764460000100', 'DropOutboxNotifyTrigger1764460000200', 'CreateGatewayTables1764500000000', 'AddApiKeyImpersonation1764500000014', 'CreateConsoleSessions1796156954600']);
      const tables = await world.sql<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [world.schema('gateway')]);
      expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['api_keys', 'members', 'organizations', 'outbox_events', 'inbox_events']));

      const again = await runCli<CliJson>(world, ['migrate', '--service', 'gateway', '--json']);
      expect(again.code).toBe(0);
      expect(again.json).toEqual({ migrated: { gateway: [] } });
    });
  });

  describe('organizations, members and keys', () => {
    beforeAll(async () => {
      const config = world.config(GatewayConfig);
      gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
      http = httpClient(await gateway.getUrl());
    });

    it('creates an organization, an admin and a key that works against the gateway, then revokes it', async () => {
      const org = await runCli<CliJson>(world, ['org:create', '--name', 'Acme Dental', '--json']);
      expect(org.code).toBe(0);
      expect(org.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Acme Dental' });
      // Exactly one JSON object on stdout, on one line.
      expect(org.stdout.trim().split('\n')).toHaveLength(1);

      const member = await runCli<CliJson>(world, ['member:add', '--org', org.json.id, '--email', 'Ana@Example.com', '--role', 'admin', '--name', 'Ana', '--json']);
      expect(member.code).toBe(0);
      expect(member.json).toMatchObject({ id: expect.any(String), organization_id: org.json.id, role: 'admin' });

      const key = await runCli<CliJson>(world, ['apikey:create', '--org', org.json.id, '--member', member.json.id, '--scopes', 'agents:read,admin', '--name', 'ops', '--json']);
      expect(key.code).toBe(0);
      expect(key.json).toMatchObject({ id: expect.any(String), secret: expect.stringMatching(/^tp_/), scopes: ['agents:read', 'admin'] });
      const [stored] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${gatewayTable(world, 'api_keys')} WHERE id = $1 AND secret_hint <> $2`, [key.json.id, key.json.secret]);
      expect(stored.n).toBe(1);

      const me = await http('GET', '/me', { secret: key.json.secret });
      expect(me.status).toBe(200);
      expect(me.body).toEqual({
        organization_id: org.json.id,
        api_key_id: key.json.id,
        scopes: ['agents:read', 'admin'],
        created_by: { member_id: member.json.id, role: 'admin', active: true },
      });
      expect((await http('GET', '/api-keys', { secret: key.json.secret })).status).toBe(200);

      // The same email again is the same member with the new role; the key loses admin-only routes.
      const demoted = await runCli<CliJson>(world, ['member:add', '--org', org.json.id, '--email', 'ana@example.com', '--role', 'operator', '--json']);
      expect(demoted.json).toMatchObject({ id: member.json.id, role: 'operator' });
      expect((await http('GET', '/api-keys', { secret: key.json.secret })).status).toBe(403);

      const revoked = await runCli<CliJson>(world, ['apikey:revoke', '--id', key.json.id, '--json']);
      expect(revoked.code).toBe(0);
      expect(revoked.json).toMatchObject({ api_key_id: key.json.id, revoked: true });
      const after = await http('GET', '/me', { secret: key.json.secret });
      expect(after.status).toBe(401);
      expect(after.body.error.code).toBe('unauthorized');
    });

    it('fails with exit code 1 and one error object naming the problem', async () => {
      const org = await runCli<CliJson>(world, ['org:create', '--name', 'Beta', '--json']);
      const badRole = await runCli<CliJson>(world, ['member:add', '--org', org.json.id, '--email', 'x@example.com', '--role', 'owner', '--json']);
      expect(badRole.code).toBe(1);
      expect(badRole.json.error).toMatchObject({ code: 'validation_failed', details: [{ field: 'role', problems: [expect.any(String)] }] });

      const noOrg = await runCli<CliJson>(world, ['member:add', '--org', randomUUID(), '--email', 'x@example.com', '--role', 'admin', '--json']);
      expect(noOrg.code).toBe(1);
      expect(noOrg.json.error.code).toBe('not_found');

      const missing = await runCli<CliJson>(world, ['apikey:create', '--org', org.json.id, '--json']);
      expect(missing.code).not.toBe(0);
      expect(missing.json.error).toMatchObject({ code: 'validation_failed', message: expect.stringContaining('--member') });

      const unknownKey = await runCli<CliJson>(world, ['apikey:revoke', '--id', randomUUID(), '--json']);
      expect(unknownKey.code).toBe(1);
      expect(unknownKey.json).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
    });
  });

  describe('dead letters', () => {
    it('lists a parked message and replays it until its handler succeeds', async () => {
      const followups = await world.start(probeService('followups', world.config(ServiceConfig, { BUS_MAX_ATTEMPTS: '1' }), true));
      const eventId = `dlq-${randomUUID()}`;
      probeControl.failing.add(eventId);
      await followups.get(UnitOfWork).run((tx) => tx.publish(probeEvent(eventId)));

      // Wait until the broker holds it in the dead-letter queue.
      const connection = await amqplib.connect(world.amqpUrl);
      try {
        const channel = await connection.createChannel();
        const dlq = new BusNames(world.namespace, 'followups').deadLetterQueue;
        await eventually(async () => (await channel.checkQueue(dlq)).messageCount === 1);
      } finally {
        await connection.close();
      }

      const listed = await runCli<CliJson>(world, ['dlq:list', '--service', 'followups', '--json']);
      expect(listed.code).toBe(0);
      expect(listed.json).toEqual({
        service: 'followups',
        dead_letters: [
          {
            event_id: eventId,
            type: 'platform.probe.recorded',
            organization_id: null,
            reason: 'handler_failed',
            error: `probe failure for ${eventId}`,
            dead_lettered_at: expect.any(String),
            attempts: 1,
          },
        ],
      });

      probeControl.failing.delete(eventId);
      const replayed = await runCli<CliJson>(world, ['dlq:replay', '--service', 'followups', '--event-id', eventId, '--json']);
      expect(replayed.code).toBe(0);
      expect(replayed.json).toEqual({ service: 'followups', replayed: [eventId] });
      await eventually(async () => {
        const [row] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('followups')}".probe_handled WHERE event_id = $1`, [eventId]);
        return row.n === 1;
      });

      const empty = await runCli<CliJson>(world, ['dlq:list', '--service', 'followups', '--json']);
      expect(empty.json).toEqual({ service: 'followups', dead_letters: [] });
    });

    it('answers an empty list for a service whose queue does not exist yet', async () => {
      const res = await runCli<CliJson>(world, ['dlq:list', '--service', 'ai-gateway', '--json']);
      expect(res.code).toBe(0);
      expect(res.json).toEqual({ service: 'ai-gateway', dead_letters: [] });
    });
  });

  describe('the gateway process', () => {
    let child: ChildProcess | undefined;
    afterAll(async () => {
      if (child && child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    });

    it('starts from main.ts, serves the Swagger UI, and logs each request with its request id', async () => {
      const org = (await runCli<CliJson>(world, ['org:create', '--name', 'Logs Inc', '--json'])).json;
      const member = (await runCli<CliJson>(world, ['member:add', '--org', org.id, '--email', 'root@example.com', '--role', 'admin', '--json'])).json;
      const key = (await runCli<CliJson>(world, ['apikey:create', '--org', org.id, '--member', member.id, '--scopes', 'admin', '--json'])).json;

      const proc = spawn(process.execPath, ['--import', '@swc-node/register/esm-register', 'apps/gateway/src/main.ts'], {
        env: { ...process.env, ...world.env, LOG_LEVEL: 'info', PORT: '0', SERVICE_PING_TIMEOUT_MS: '300' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = proc;
      const lines: (Record<string, unknown> & { event?: string; url?: string })[] = [];
      createInterface({ input: proc.stdout! }).on('line', (line) => {
        try {
          lines.push(JSON.parse(line));
        } catch {
          lines.push({ raw: line });
        }
      });
      const started = await eventually(() => lines.find((l) => l.event === 'service.started'), 30_000);
      const gatewayHttp = httpClient(started.url!);

      const me = await gatewayHttp('GET', '/me', { secret: key.secret, headers: { 'x-request-id': 'trace-me-1' } });
      expect(me.status).toBe(200);
      const down = await gatewayHttp('GET', '/system/services/outreach/ping', { secret: key.secret, headers: { 'x-request-id': 'trace-me-2' } });
      expect(down.status).toBe(503);
      const docs = await gatewayHttp('GET', '/docs');
      expect(docs.status).toBe(200);
      expect(String(docs.body)).toContain('swagger-ui');
      const asset = await gatewayHttp('GET', '/docs/swagger-ui-bundle.js');
      expect(asset.status).toBe(200);

      const access = await eventually(() => lines.find((l) => l.event === 'http.request' && l.request_id === 'trace-me-1'));
      expect(access).toMatchObject({ method: 'GET', route: '/me', status: 200, organization_id: org.id, ms: expect.any(Number) });
      // A line written deep inside the request (by the forwarder) carries the request's id and tenant.
      const inner = await eventually(() => lines.find((l) => l.event === 'gateway.forward_failed'));
      expect(inner).toMatchObject({ request_id: 'trace-me-2', organization_id: org.id, service: 'outreach', code: 'service_unavailable' });
      await eventually(() => lines.find((l) => l.event === 'http.request' && l.request_id === 'trace-me-2' && l.status === 503));
    });
  });
});
