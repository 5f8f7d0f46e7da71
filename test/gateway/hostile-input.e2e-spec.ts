import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { PlatformRpc } from '@touchpoint/contracts';
import type { ErrorEnvelope } from '@touchpoint/errors';
import { RpcClient } from '@touchpoint/runtime';
import { aFlow, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { BEARER_SCHEME } from '../../apps/gateway/src/http/openapi.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { OutreachConfig } from '../../apps/outreach/src/outreach.config.js';
import { OutreachModule } from '../../apps/outreach/src/outreach.module.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, registerSender } from '../messaging/helpers.js';
import { dispatcherConfig, SandboxHandle } from '../outbox/harness.js';
import { gatewayBuilders, httpClient, type SeededKey } from './gateway-world.js';

type Schema = { $ref?: string; type?: string; format?: string; enum?: unknown[]; example?: unknown; pattern?: string; properties?: Record<string, Schema>; required?: string[]; items?: Schema; allOf?: Schema[]; minItems?: number; minimum?: number; maxLength?: number };
type Parameter = { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema?: Schema };
type Operation = { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> }; security?: Record<string, string[]>[] };
type OpenApi = { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Schema> } };

/** One request the walk sends, and what came back. */
interface Probe {
  route: string;
  kind: 'nul' | 'long_path_parameter' | 'megabyte_string';
  status: number;
  code?: unknown;
  message?: unknown;
  requestId: string | null;
}

const MEGABYTE = 1_000_000;

/**
 * Bad input over every route of the served OpenAPI document, with the whole platform running:
 * a NUL character, a path parameter over the router's limit and a 1 MB string. Every answer is
 * below 500, a refusal is in our envelope, and every answer carries `x-request-id`. Also: ids of
 * another organization in a body are refused with the 404 of an unknown id.
 */
describe('Hostile input over every route', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let gateway: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let a: SeededKey;
  let b: SeededKey;
  let document: OpenApi;

  beforeAll(async () => {
    world = await createTestWorld('hostile');
    sandbox = await SandboxHandle.start();
    messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '300' })));
    await world.start(FollowupsModule.forRoot(world.config(FollowupsConfig, { FOLLOWUP_RELEASE_ENABLED: 'false' })));
    await world.start(OutreachModule.forRoot(world.config(OutreachConfig, { OUTREACH_RUNNER_ENABLED: 'false', OUTREACH_SWEEP_INTERVAL_MS: '0' })));
    await world.start(OutboxDispatcherModule.forRoot(dispatcherConfig(world, sandbox)));
    await world.start(AbuseModule.forRoot(world.config(AbuseConfig)));
    const ai = await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: `${sandbox.url}/v1` })));
    const config = world.config(GatewayConfig, { RPC_TIMEOUT_MS: '3000' });
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    const rpc = ai.get(RpcClient);
    for (const service of ['messaging', 'followups', 'outreach', 'outbox-dispatcher', 'abuse', 'ai-gateway'] as const) await eventually(() => rpc.call(service, PlatformRpc.Ping, {}, 2000), 20_000, 200);
    http = httpClient(await gateway.getUrl());
    const every = ['admin', 'agents:read', 'agents:write', 'outreach:read', 'outreach:write', 'messaging:read', 'messaging:write', 'crm:write'] as const;
    a = await gatewayBuilders(gateway).organizationWithKey({ scopes: [...every] });
    b = await gatewayBuilders(gateway).organizationWithKey({ scopes: [...every] });
    document = (await http('GET', '/docs/json')).body as OpenApi;
  }, 120_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  // --- request building from the document -------------------------------------------------

  const deref = (schema: Schema | undefined): Schema => {
    if (!schema) return {};
    if (schema.$ref) return deref(document.components?.schemas?.[schema.$ref.split('/').pop()!]);
    if (schema.allOf) return schema.allOf.map(deref).reduce((acc, s) => ({ ...acc, ...s, properties: { ...acc.properties, ...s.properties }, required: [...(acc.required ?? []), ...(s.required ?? [])] }), {} as Schema);
    return schema;
  };
  /** A free-text string: no format, enum or pattern to refuse a NUL or a megabyte before the database. */
  const isFreeText = (schema: Schema) => schema.type === 'string' && !schema.format && !schema.enum && !schema.pattern;
  const TEXT = '\u0001free text\u0001';

  /**
   * A value of `schema` that validation accepts where it can; free text is TEXT, `customer_id` the
   * caller's. `all` fills the optional properties too (where more text fields hide, at the price of
   * more values validation may refuse first); otherwise only the required ones.
   */
  function sample(raw: Schema | undefined, depth = 0, all = false): unknown {
    const schema = deref(raw);
    if (schema.enum) return schema.enum[0];
    if (schema.type === 'string') {
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'date-time') return new Date().toISOString();
      if (schema.format === 'email') return 'someone@example.com';
      if (schema.example !== undefined && typeof schema.example === 'string' && !isFreeText(schema)) return schema.example;
      return isFreeText(schema) ? TEXT : (schema.example ?? 'x');
    }
    if (schema.type === 'integer' || schema.type === 'number') return schema.minimum ?? 1;
    if (schema.type === 'boolean') return false;
    if (schema.type === 'array') return schema.minItems || all ? [sample(schema.items, depth + 1, all)] : [];
    if ((schema.type === 'object' || schema.properties) && depth < 6) {
      const out: Record<string, unknown> = {};
      for (const name of all ? Object.keys(schema.properties ?? {}) : (schema.required ?? [])) out[name] = name === 'customer_id' ? a.organizationId : sample(schema.properties?.[name], depth + 1, all);
      return out;
    }
    return schema.example ?? null;
  }

  /** `value` with every TEXT replaced by `replace()` (all of them, or only the first). */
  function replaceText(value: unknown, replace: () => string, onlyFirst: { done: boolean } | null = null): unknown {
    if (value === TEXT) {
      if (onlyFirst?.done) return 'x';
      if (onlyFirst) onlyFirst.done = true;
      return replace();
    }
    if (Array.isArray(value)) return value.map((v) => replaceText(v, replace, onlyFirst));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceText(v, replace, onlyFirst)]));
    return value;
  }
  const containsText = (value: unknown): boolean => value === TEXT || (Array.isArray(value) ? value.some(containsText) : value && typeof value === 'object' ? Object.values(value).some(containsText) : false);

  interface Built {
    path: (override?: (name: string) => string | undefined) => string;
    query: Record<string, string>;
    body: unknown;
    pathParameters: Parameter[];
  }
  function build(route: string, operation: Operation, all = false): Built {
    const parameters = operation.parameters ?? [];
    const pathParameters = parameters.filter((p) => p.in === 'path');
    const query: Record<string, string> = {};
    for (const p of parameters.filter((q) => q.in === 'query')) {
      if (p.name === 'customer_id') query[p.name] = a.organizationId;
      else if (p.required || isFreeText(deref(p.schema))) query[p.name] = String(sample(p.schema));
    }
    const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
    const body = bodySchema ? sample(bodySchema, 0, all) : undefined;
    const path = (override?: (name: string) => string | undefined) =>
      route.replace(/\{([^}]+)\}/g, (_m, name: string) => {
        const given = override?.(name);
        if (given !== undefined) return encodeURIComponent(given);
        if (name === 'customer_id') return a.organizationId;
        const schema = deref(pathParameters.find((p) => p.name === name)?.schema);
        return encodeURIComponent(schema.format === 'uuid' || /_id$/.test(name) ? randomUUID() : String(sample(schema)));
      });
    return { path, query, body, pathParameters };
  }

  const operations = () =>
    Object.entries(document.paths).flatMap(([route, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        // The API-key routes. The provider webhooks and the unsubscribe link are documented too, but
        // they check a signature or a signed token instead (and a webhook reads its raw bytes, NULs
        // included): their refusals are tested with their ingress (test/outbox, test/outreach).
        .filter(([, operation]) => (operation.security ?? []).some((requirement) => BEARER_SCHEME in requirement))
        .map(([method, operation]) => ({ route, method: method.toUpperCase(), operation })),
    );

  async function send(kind: Probe['kind'], route: string, method: string, path: string, query: Record<string, string>, body: unknown): Promise<Probe> {
    const search = new URLSearchParams(query).toString();
    const res = await http(method, `${path}${search ? `?${search}` : ''}`, { secret: a.secret, ...(body !== undefined && method !== 'GET' && method !== 'DELETE' ? { json: body } : {}) });
    return { route: `${method} ${route}`, kind, status: res.status, code: res.body?.error?.code, message: res.body?.error?.message, requestId: res.headers.get('x-request-id') };
  }

  /** Every probe of the walk: a NUL, an over-long path parameter, a megabyte string. */
  async function walk(): Promise<Probe[]> {
    const probes: Probe[] = [];
    for (const { route, method, operation } of operations()) {
      const built = build(route, operation);
      // A NUL in every text place the route has (body, query and path), and in a query parameter in
      // any case; once with the required body fields only, once with every field.
      const nul = () => 'a\u0000b';
      for (const variant of [built, build(route, operation, true)]) {
        const nulQuery = { ...Object.fromEntries(Object.entries(variant.query).map(([k, v]) => [k, v === TEXT ? nul() : v])), note: nul() };
        const textPath = variant.pathParameters.find((p) => isFreeText(deref(p.schema)) && p.name !== 'customer_id' && !/_id$/.test(p.name));
        probes.push(
          await send(
            'nul',
            route,
            method,
            variant.path((name) => (name === textPath?.name ? nul() : undefined)),
            nulQuery,
            replaceText(variant.body, nul),
          ),
        );
      }
      // A path parameter over the router's limit (100 characters).
      if (built.pathParameters.length > 0) {
        const first = built.pathParameters[0]!.name;
        probes.push(
          await send(
            'long_path_parameter',
            route,
            method,
            built.path((name) => (name === first ? 'a'.repeat(101) : undefined)),
            built.query,
            built.body,
          ),
        );
      }
      // A 1 MB string in the first text field of the body, or else in a query parameter.
      const megabyte = () => 'x'.repeat(MEGABYTE);
      if (containsText(built.body)) probes.push(await send('megabyte_string', route, method, built.path(), built.query, replaceText(built.body, megabyte, { done: false })));
      else probes.push(await send('megabyte_string', route, method, built.path(), { ...built.query, note: megabyte() }, built.body));
    }
    return probes;
  }

  it('answers a NUL, an over-long path parameter and a 1 MB string on every route with a 4xx in our envelope, with x-request-id', async () => {
    const probes = await walk();
    const routes = new Set(probes.map((p) => p.route));
    expect(routes.size).toBeGreaterThan(50);
    const serverErrors = probes.filter((p) => p.status >= 500);
    const outsideEnvelope = probes.filter((p) => p.status >= 400 && (typeof p.code !== 'string' || typeof p.message !== 'string'));
    const withoutRequestId = probes.filter((p) => !p.requestId);
    const accepted = probes.filter((p) => p.status < 400);
    process.stderr.write(
      `hostile-input walk: ${routes.size} routes, ${probes.length} probes (${probes.filter((p) => p.kind === 'nul').length} NUL, ${probes.filter((p) => p.kind === 'long_path_parameter').length} long path parameter, ${probes.filter((p) => p.kind === 'megabyte_string').length} 1 MB); 5xx: ${serverErrors.length}${serverErrors.length ? ` (${serverErrors.map((p) => `${p.kind} ${p.route}`).join('; ')})` : ''}; outside the envelope: ${outsideEnvelope.length}; without x-request-id: ${withoutRequestId.length}; accepted (<400): ${accepted.length}${accepted.length ? ` (${accepted.map((p) => `${p.kind} ${p.route} ${p.status}`).join('; ')})` : ''}\n`,
    );
    expect(serverErrors).toEqual([]);
    expect(outsideEnvelope).toEqual([]);
    expect(withoutRequestId).toEqual([]);
    // A NUL and an over-long path parameter are always refused; a 1 MB text may be a valid value.
    expect(accepted.filter((p) => p.kind !== 'megabyte_string')).toEqual([]);
    expect(probes.filter((p) => p.kind === 'nul').every((p) => p.status === 400 && p.code === 'validation_failed')).toBe(true);
    expect(probes.filter((p) => p.kind === 'long_path_parameter').every((p) => p.status === 414 && p.code === 'uri_too_long')).toBe(true);
  }, 300_000);

  describe('ids of another organization in a body', () => {
    let waSeq = 0;
    /** A contact of `org` writes in on WhatsApp: its contact and conversation. */
    async function writesIn(org: string): Promise<{ contact_id: string; conversation_id: string }> {
      const pnid = `pn-${org.slice(0, 8)}`;
      await registerSender(world, org, pnid);
      const waId = `55119${String(80_000_000 + ++waSeq)}`;
      await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, 'Oi', Math.floor(Date.now() / 1000), pnid));
      const [row] = await world.sql<{ contact_id: string; conversation_id: string }>(
        `SELECT m.contact_id, m.conversation_id FROM "${world.schema('messaging')}".messages m JOIN "${world.schema('messaging')}".contacts c ON c.id = m.contact_id WHERE c.organization_id = $1 AND c.phone = $2`,
        [org, `+${waId}`],
      );
      return row!;
    }
    /** A WhatsApp sender of `key`'s organization, proven at the sandbox's Graph. */
    async function sender(key: SeededKey, channel: 'whatsapp' | 'email' = 'whatsapp'): Promise<string> {
      if (channel === 'email') {
        const grant = `grant-${randomUUID()}`;
        await sandbox.post('/sandbox/nylas/grants', { grant_id: grant, api_key: `key-${grant}` });
        return (await http('POST', '/senders/accounts', { secret: key.secret, json: { channel: 'email', account_id: grant, address: 'sales@example.com', api_key: `key-${grant}` } })).body.id;
      }
      const pnid = String(300_000_000_000_000 + ++waSeq);
      await sandbox.post('/sandbox/meta/numbers', { phone_number_id: pnid, access_token: `token-${pnid}` });
      return (await http('POST', '/senders', { secret: key.secret, json: { channel: 'whatsapp', phone_number_id: pnid, display_phone_number: '5511912345678', business_account_id: '1', access_token: `token-${pnid}` } })).body.id;
    }
    const flowBody = (org: string, senderSettings?: object) => ({
      customer_id: org,
      name: `flow ${randomUUID().slice(0, 6)}`,
      graph: aFlow().graph,
      settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC', ...(senderSettings ? { sender: senderSettings } : {}) },
    });
    const refusal = (res: { status: number; body: Partial<ErrorEnvelope> | undefined }) => ({ status: res.status, code: res.body?.error?.code, message: res.body?.error?.message });
    const rows = async (service: 'followups' | 'outreach', table: string, org: string) => world.sql(`SELECT 1 FROM "${world.schema(service)}".${table} WHERE organization_id = $1`, [org]);

    it("refuses another organization's contact, conversation and sender in an enrollment, as it refuses an unknown id, and stores nothing", async () => {
      const own = await writesIn(a.organizationId);
      const theirs = await writesIn(b.organizationId);
      const theirSender = await sender(b);
      const created = await http('POST', '/ai/followup-flows', { secret: a.secret, json: flowBody(a.organizationId) });
      const flowId = created.body.data.id;
      const published = await http('POST', `/ai/followup-flows/${flowId}/publish`, { secret: a.secret, json: { customer_id: a.organizationId, expected_revision: 1 } });
      expect(published.status).toBe(200);
      const active = await http('PATCH', `/ai/followup-flows/${flowId}`, { secret: a.secret, json: { customer_id: a.organizationId, expected_revision: published.body.data.revision, status: 'active' } });
      expect(active.status).toBe(200);
      const enroll = (ids: Record<string, string>) => http('POST', '/ai/followups/enrollments', { secret: a.secret, json: { customer_id: a.organizationId, flow_id: flowId, operation_key: randomUUID(), ...ids } });
      const unknown = refusal(await enroll({ contact_id: randomUUID() }));
      expect(unknown).toEqual({ status: 404, code: 'not_found', message: 'contact not found' });
      expect(refusal(await enroll({ contact_id: theirs.contact_id }))).toEqual(unknown);
      expect(refusal(await enroll({ contact_id: own.contact_id, conversation_id: theirs.conversation_id }))).toEqual({ status: 404, code: 'not_found', message: 'conversation not found' });
      expect(refusal(await enroll({ contact_id: own.contact_id, sender_id: theirSender }))).toEqual({ status: 404, code: 'not_found', message: 'sender not found' });
      expect(await rows('followups', 'enrollments', a.organizationId)).toEqual([]);
      const ok = await enroll({ contact_id: own.contact_id, conversation_id: own.conversation_id, sender_id: await sender(a) });
      expect(ok.status).toBe(201);
    });

    it("refuses another organization's contact and conversation in a return (promise)", async () => {
      const own = await writesIn(a.organizationId);
      const theirs = await writesIn(b.organizationId);
      const promise = (ids: Record<string, string>) =>
        http('POST', '/ai/followups/promises', { secret: a.secret, json: { customer_id: a.organizationId, operation_key: randomUUID(), reason: 'asked', promise: 'call back', promised_at: new Date(Date.now() + 3_600_000).toISOString(), outside_window: 'alert', ...ids } });
      expect(refusal(await promise({ contact_id: theirs.contact_id }))).toEqual({ status: 404, code: 'not_found', message: 'contact not found' });
      expect(refusal(await promise({ contact_id: own.contact_id, conversation_id: theirs.conversation_id }))).toEqual({ status: 404, code: 'not_found', message: 'conversation not found' });
      expect(await rows('followups', 'promises', a.organizationId)).toEqual([]);
    });

    it("refuses another organization's sender as a flow's fixed sender", async () => {
      const theirSender = await sender(b);
      const before = await rows('followups', 'flows', a.organizationId);
      const res = await http('POST', '/ai/followup-flows', { secret: a.secret, json: flowBody(a.organizationId, { mode: 'fixed', sender_id: theirSender }) });
      expect(refusal(res)).toEqual({ status: 404, code: 'not_found', message: 'sender not found' });
      expect(await rows('followups', 'flows', a.organizationId)).toHaveLength(before.length);
      expect((await http('POST', '/ai/followup-flows', { secret: a.secret, json: flowBody(a.organizationId, { mode: 'fixed', sender_id: await sender(a) }) })).status).toBe(201);
    });

    it("refuses another organization's mailbox as a campaign's email sender, and a sender of another channel", async () => {
      const campaign = (extra: object) => http('POST', '/agentic/outreach/campaigns', { secret: a.secret, json: { name: 'Chairs', goal: 'Book a demo', allowed_channels: ['email'], max_touches: 2, followup_min_days: 2, followup_max_days: 4, ...extra } });
      const theirMailbox = await sender(b, 'email');
      expect(refusal(await campaign({ email_sender_id: theirMailbox }))).toEqual({ status: 404, code: 'not_found', message: 'sender not found' });
      expect(refusal(await campaign({ email_sender_id: randomUUID() }))).toEqual({ status: 404, code: 'not_found', message: 'sender not found' });
      // A sender id is a uuid: anything else is a bad request, like every other id field.
      for (const field of ['email_sender_id', 'linkedin_sender_id']) expect(refusal(await campaign({ [field]: 'not-a-uuid' }))).toMatchObject({ status: 400, code: 'validation_failed' });
      expect((await campaign({ email_sender_id: await sender(a) })).status).toBe(400);
      expect(await rows('outreach', 'campaigns', a.organizationId)).toEqual([]);
      expect((await campaign({ email_sender_id: await sender(a, 'email') })).status).toBe(201);
    });
  });
});
