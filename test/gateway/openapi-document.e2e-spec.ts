import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ActionView, ContactView, EffectView, OutboxEntryView } from '@touchpoint/contracts';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { BEARER_SCHEME } from '../../apps/gateway/src/http/openapi.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const SPECTRAL = path.join(ROOT, 'node_modules/@stoplight/spectral-cli/dist/index.js');
const OPENAPI_TS = path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const RULESET = path.join(ROOT, '.spectral.yaml');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
};
type OpenApi = {
  tags?: { name: string; description?: string }[];
  servers?: unknown[];
  info: { contact?: Record<string, string>; license?: Record<string, string> };
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
};
interface SpectralResult {
  code: string;
  message: string;
  path: string[];
  severity: number;
}

/** Spectral's findings on `file` with our ruleset (`spectral:oas`), as JSON. */
async function spectral(file: string): Promise<SpectralResult[]> {
  // Spectral exits non-zero when it finds an error; its JSON report is on stdout either way.
  const out = await run(process.execPath, [SPECTRAL, 'lint', file, '--ruleset', RULESET, '--format', 'json', '--quiet'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return JSON.parse(out.stdout) as SpectralResult[];
}

/** Type-checks `files` in `dir` strictly, no emit; resolves with tsc's diagnostics ('' when clean). */
async function typecheck(dir: string, files: string[]): Promise<string> {
  const project = path.join(dir, `tsconfig.${files.at(-1)}.json`);
  const compilerOptions = { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [], skipLibCheck: true };
  await writeFile(project, JSON.stringify({ compilerOptions, files }));
  return run(process.execPath, [TSC, '-p', project], { cwd: dir }).then(
    () => '',
    (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}` || 'tsc failed',
  );
}

/**
 * A small program against the generated types: a typed `call` over `paths` (path, query and body
 * typed per operation, the answer typed by its 2xx schema), then three routes whose request and
 * answer fields it uses. `variant` swaps in a misspelt field to show the check bites.
 */
function clientProgram(variant: 'correct' | 'wrong_response_field' | 'wrong_body_field'): string {
  const status = variant === 'wrong_response_field' ? 'detail.data.enrollment.stauts' : 'detail.data.enrollment.status';
  const name = variant === 'wrong_body_field' ? 'nmae' : 'name';
  return `import type { paths } from './api.js';

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';
type Params<O> = O extends { parameters: infer P } ? P : never;
type Body<O> = O extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
type Ok<O> = O extends { responses: { 200: { content: { 'application/json': infer R } } } }
  ? R
  : O extends { responses: { 201: { content: { 'application/json': infer R } } } }
    ? R
    : never;

async function call<P extends keyof paths, M extends Method>(
  base: string,
  secret: string,
  method: M,
  route: P,
  init: { params: Params<paths[P][M]>; body?: Body<paths[P][M]> },
): Promise<Ok<paths[P][M]>> {
  const params = init.params as { path?: Record<string, string>; query?: Record<string, string | number> };
  const url = new URL(String(route).replace(/\\{(\\w+)\\}/g, (_m, key: string) => encodeURIComponent(params.path?.[key] ?? '')), base);
  for (const [key, value] of Object.entries(params.query ?? {})) url.searchParams.set(key, String(value));
  const res = await fetch(url, {
    method: method.toUpperCase(),
    headers: { authorization: 'Bearer ' + secret, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  if (!res.ok) throw new Error(method + ' ' + String(route) + ' answered ' + res.status);
  return (await res.json()) as Ok<paths[P][M]>;
}

export async function main(base: string, secret: string, customerId: string, enrollmentId: string): Promise<string[]> {
  const contact = await call(base, secret, 'post', '/contacts', { params: {}, body: { ${name}: 'Ana Souza', phone: '+55 11 98765-4321', tags: ['vip'] } });
  const contactId: string = contact.id;
  const phone: string | null = contact.phone;

  const flows = await call(base, secret, 'get', '/ai/followup-flows', { params: { query: { customer_id: customerId } } });
  const flowNames: string[] = flows.data.map((flow) => flow.name + ' ' + flow.status + ' r' + flow.revision);

  const detail = await call(base, secret, 'get', '/ai/followups/enrollments/{id}', { params: { path: { id: enrollmentId }, query: { customer_id: customerId } } });
  const status: string = ${status};
  const sends: number = detail.data.effects.filter((effect) => effect.kind === 'send').length;
  const nextRun: string | null = detail.data.enrollment.next_run_at;

  return [contactId, phone ?? '', ...flowNames, status, String(sends), nextRun ?? ''];
}
`;
}

/**
 * The served OpenAPI document is complete enough for tools: Spectral's standard OpenAPI ruleset
 * finds nothing (media and schema examples validate against their schemas), every operation has an
 * id, a summary, a declared tag and a typed success answer, and a client typed from it with
 * openapi-typescript type-checks — and fails to with a misspelt field.
 */
describe('OpenAPI document', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let dir: string;
  let docFile: string;
  let doc: OpenApi;

  beforeAll(async () => {
    world = await createTestWorld('openapi');
    const config = world.config(GatewayConfig);
    app = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    const res = await fetch(`${await app.getUrl()}/docs/json`);
    expect(res.status).toBe(200);
    const text = await res.text();
    doc = JSON.parse(text) as OpenApi;
    dir = await mkdtemp(path.join(tmpdir(), 'touchpoint-openapi-'));
    docFile = path.join(dir, 'openapi.json');
    await writeFile(docFile, text);
  });
  afterAll(async () => {
    await world.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const operations = (): [string, Operation][] => Object.entries(doc.paths).flatMap(([route, item]) => METHODS.filter((m) => item[m]).map((m) => [`${m.toUpperCase()} ${route}`, item[m]!] as [string, Operation]));

  it('uses the standard spectral:oas ruleset, with example validation on', async () => {
    const ruleset = await readFile(RULESET, 'utf8');
    expect(ruleset).toMatch(/^extends:\s*\[["']spectral:oas["']\]\s*$/m);
    // Nothing turned off or relaxed: the ruleset is the standard one as it ships.
    expect(ruleset).not.toMatch(/^rules:/m);
  });

  it('passes Spectral (spectral:oas) with 0 errors and 0 warnings', async () => {
    const findings = await spectral(docFile);
    expect(findings.map((f) => `${f.code} at ${f.path.join('.')}: ${f.message}`)).toEqual([]);
  }, 120_000);

  it('is linted for real: a broken copy (no servers, an example of the wrong type, an undeclared tag) is reported', async () => {
    const broken = structuredClone(doc) as OpenApi & { components: { schemas: Record<string, { properties: Record<string, { example?: unknown }> }> } };
    delete broken.servers;
    broken.components.schemas.ContactDto!.properties.erased!.example = 'not a boolean';
    broken.paths['/contacts']!.post!.tags = ['no-such-tag'];
    const file = path.join(dir, 'broken.json');
    await writeFile(file, JSON.stringify(broken));
    const codes = new Set((await spectral(file)).map((f) => f.code));
    expect([...codes].sort()).toEqual(['oas3-api-servers', 'oas3-valid-schema-example', 'operation-tag-defined']);
  }, 120_000);

  it('gives every operation an id, a summary, a declared tag and a success answer with a schema', () => {
    const declared = new Set((doc.tags ?? []).map((t) => t.name));
    expect((doc.tags ?? []).every((t) => (t.description ?? '').length > 0)).toBe(true);
    expect(doc.servers?.length).toBeGreaterThan(0);
    expect(doc.info.contact).toEqual(expect.objectContaining({ name: expect.any(String), url: expect.any(String), email: expect.any(String) }));
    expect(doc.info.license).toEqual(expect.objectContaining({ name: expect.any(String), url: expect.any(String) }));
    const problems: string[] = [];
    const ids = new Set<string>();
    for (const [name, op] of operations()) {
      if (!op.operationId || ids.has(op.operationId)) problems.push(`${name}: operationId missing or repeated`);
      ids.add(op.operationId ?? '');
      if (!op.summary) problems.push(`${name}: no summary`);
      if (!op.tags?.length || !op.tags.every((t) => declared.has(t))) problems.push(`${name}: tag missing or undeclared`);
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
      if (success.length === 0 || !success.every(([status, r]) => status === '204' || Object.values(r.content ?? {}).some((media) => media.schema))) problems.push(`${name}: no 2xx answer with a schema (a 204 has no body)`);
      for (const [status, r] of Object.entries(op.responses)) {
        const json = r.content?.['application/json']?.schema as { $ref?: string } | undefined;
        if (Number(status) >= 400 && json?.$ref !== '#/components/schemas/ErrorEnvelopeDto') problems.push(`${name}: ${status} is not the error envelope`);
      }
    }
    expect(problems).toEqual([]);
    expect(operations().length).toBeGreaterThanOrEqual(90);
  });

  it("gives every success answer an example (at the media type or on its schema's fields)", () => {
    type Schema = { $ref?: string; example?: unknown; properties?: Record<string, Schema>; items?: Schema; allOf?: Schema[]; oneOf?: Schema[] };
    const schemas = (doc as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas;
    const exemplified = (schema: Schema | undefined, seen = new Set<string>()): boolean => {
      if (!schema) return false;
      if (schema.example !== undefined) return true;
      if (schema.$ref) {
        const name = schema.$ref.split('/').pop()!;
        if (seen.has(name)) return false;
        seen.add(name);
        return exemplified(schemas[name], seen);
      }
      return [...Object.values(schema.properties ?? {}), ...(schema.items ? [schema.items] : []), ...(schema.allOf ?? []), ...(schema.oneOf ?? [])].some((s) => exemplified(s, seen));
    };
    const without = operations().flatMap(([name, op]) =>
      Object.entries(op.responses)
        .filter(([status]) => status.startsWith('2'))
        .flatMap(([status, r]) =>
          Object.entries(r.content ?? {})
            .filter(([, media]) => (media as { example?: unknown }).example === undefined && !exemplified(media.schema as Schema))
            .map(([type]) => `${name} ${status} ${type}`),
        ),
    );
    expect(without).toEqual([]);
  });

  it('states the list envelope once: every list of our own routes extends ListEnvelope, and only seed-002 routes answer {data}', () => {
    type Schema = { $ref?: string; allOf?: Schema[]; properties?: Record<string, { type?: string }> };
    const schemas = (doc as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas;
    expect(schemas.ListEnvelope?.properties?.next_cursor).toBeDefined();
    const problems: string[] = [];
    for (const [name, op] of operations()) {
      if (/ \/ai\//.test(name)) continue;
      for (const [status, r] of Object.entries(op.responses).filter(([s]) => s.startsWith('2'))) {
        const ref = (r.content?.['application/json']?.schema as Schema | undefined)?.$ref;
        const schema = ref ? schemas[ref.split('/').pop()!] : undefined;
        if (!schema) continue;
        const fields = Object.keys(schema.properties ?? {});
        if (fields.includes('data') && fields.every((f) => f === 'data' || f === 'created')) problems.push(`${name} ${status}: answers {data}`);
        if (schema.properties?.items?.type === 'array') problems.push(`${name} ${status}: a list not built on ListEnvelope`);
        if (schema.allOf && schema.allOf[0]?.$ref !== '#/components/schemas/ListEnvelope') problems.push(`${name} ${status}: allOf without ListEnvelope`);
      }
    }
    expect(problems).toEqual([]);
    expect(schemas.ContactPageDto?.allOf?.[0]).toEqual({ $ref: '#/components/schemas/ListEnvelope' });
  });

  it('documents every field the wire carries on a contact, an ambiguous send, a follow-up effect and an outreach action, with its type', () => {
    type Property = { type?: string; format?: string; nullable?: boolean; enum?: unknown[] };
    const schemas = (doc as unknown as { components: { schemas: Record<string, { properties?: Record<string, Property> }> } }).components.schemas;
    // Every key of the view, checked by the compiler: a field added to a view fails here until the document has it.
    const keysOf = <T>(all: Record<keyof T, true>): string[] => Object.keys(all);
    const wire: Record<string, string[]> = {
      ContactDto: keysOf<ContactView>({
        id: true,
        organization_id: true,
        kind: true,
        name: true,
        phone: true,
        email: true,
        linkedin_url: true,
        linkedin_provider_id: true,
        linked_contact_id: true,
        tags: true,
        custom_fields: true,
        time_zone: true,
        user_type: true,
        opted_out_at: true,
        erased: true,
        created_at: true,
        updated_at: true,
      }),
      AmbiguousSendDto: keysOf<OutboxEntryView>({
        id: true,
        organization_id: true,
        channel: true,
        sender_id: true,
        to: true,
        pacing_key: true,
        idempotency_key: true,
        payload_type: true,
        status: true,
        attempts: true,
        max_attempts: true,
        next_attempt_at: true,
        provider_message_id: true,
        last_error_code: true,
        last_classification: true,
        last_error_message: true,
        log_context: true,
        created_at: true,
        updated_at: true,
      }),
      EffectDto: keysOf<EffectView>({
        id: true,
        enrollment_id: true,
        node_id: true,
        kind: true,
        status: true,
        text: true,
        template: true,
        usage: true,
        message_id: true,
        idempotency_key: true,
        sender_id: true,
        reason: true,
        delivery_status: true,
        delivered_at: true,
        read_at: true,
        decided_at: true,
        resolution: true,
        created_at: true,
        updated_at: true,
      }),
      ActionDto: keysOf<ActionView>({
        id: true,
        organization_id: true,
        enrollment_id: true,
        decision_id: true,
        type: true,
        status: true,
        draft_payload: true,
        approved_payload: true,
        approved_hash: true,
        approved_by: true,
        approved_at: true,
        next_attempt_at: true,
        rejected_by: true,
        rejected_at: true,
        reject_reason: true,
        reject_then: true,
        executed_at: true,
        message_id: true,
        provider_message_id: true,
        failure_reason: true,
        outcome_unknown: true,
        created_at: true,
      }),
    };
    const missing = Object.entries(wire).flatMap(([name, fields]) => fields.filter((f) => !schemas[name]?.properties?.[f]).map((f) => `${name}.${f}`));
    expect(missing).toEqual([]);

    const nullableString = { type: 'string', nullable: true };
    const at = { ...nullableString, format: 'date-time' };
    const props = (name: string) => schemas[name]!.properties!;
    expect(props('ContactDto').linked_contact_id).toMatchObject(nullableString);
    expect(props('AmbiguousSendDto').last_error_message).toMatchObject(nullableString);
    expect(props('EffectDto')).toMatchObject({ delivery_status: { ...nullableString, enum: ['delivered', 'read'] }, delivered_at: at, read_at: at });
    expect(props('ActionDto')).toMatchObject({
      organization_id: { type: 'string' },
      next_attempt_at: at,
      rejected_by: nullableString,
      rejected_at: at,
      executed_at: at,
      message_id: nullableString,
      provider_message_id: nullableString,
      failure_reason: nullableString,
      outcome_unknown: { type: 'boolean' },
      created_at: { type: 'string', format: 'date-time' },
    });
  });

  it('documents the webhook and unsubscribe routes with their signature or token, not an API key', () => {
    const security = (route: string, method: 'get' | 'post') => doc.paths[route]?.[method]?.security;
    expect(security('/webhooks/meta', 'post')).toEqual([{ 'meta-signature': [] }]);
    expect(security('/webhooks/meta', 'get')).toEqual([{ 'meta-verify-token': [] }]);
    expect(security('/webhooks/nylas', 'post')).toEqual([{ 'nylas-signature': [] }]);
    expect(security('/webhooks/nylas', 'get')).toEqual([]);
    expect(security('/webhooks/unipile', 'post')).toEqual([{ 'unipile-secret': [] }]);
    expect(security('/nylas/email/unsubscribe', 'get')).toEqual([{ 'unsubscribe-token': [] }]);
    expect(security('/nylas/email/unsubscribe', 'post')).toEqual([{ 'unsubscribe-token': [] }]);
    const keyed = operations().filter(([name, op]) => /\/webhooks\/|\/unsubscribe/.test(name) && JSON.stringify(op.security ?? []).includes(BEARER_SCHEME));
    expect(keyed.map(([name]) => name)).toEqual([]);
  });

  it('types a client with openapi-typescript that type-checks a program calling a few routes, and not one with a misspelt field', async () => {
    // A property with a default is optional in a request body: by default the generator would make it required.
    await run(process.execPath, [OPENAPI_TS, docFile, '--default-non-nullable', 'false', '--output', path.join(dir, 'api.ts')], { cwd: ROOT });
    await writeFile(path.join(dir, 'client.ts'), clientProgram('correct'));
    await writeFile(path.join(dir, 'wrong-response.ts'), clientProgram('wrong_response_field'));
    await writeFile(path.join(dir, 'wrong-body.ts'), clientProgram('wrong_body_field'));

    expect(await typecheck(dir, ['api.ts', 'client.ts'])).toBe('');
    const wrongResponse = await typecheck(dir, ['api.ts', 'wrong-response.ts']);
    expect(wrongResponse).toContain("Property 'stauts' does not exist");
    const wrongBody = await typecheck(dir, ['api.ts', 'wrong-body.ts']);
    expect(wrongBody).toContain("'nmae' does not exist");
  }, 180_000);
});
