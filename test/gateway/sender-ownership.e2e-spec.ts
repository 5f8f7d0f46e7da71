import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import type { ErrorEnvelope } from '@touchpoint/errors';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { type Dispatcher, SandboxHandle, startDispatcher } from '../outbox/harness.js';
import { gatewayBuilders, httpClient, type SeededKey } from './gateway-world.js';

/**
 * A sender is stored only once its credential proves, at the provider, that it owns the id the
 * sender claims (the WhatsApp number, the Nylas grant, the Unipile account): whoever registers an
 * id receives its inbound messages. The proof comes before the "already registered" check, so a
 * refusal says nothing about ids the caller cannot read.
 */
describe('Sender ownership', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let victim: SeededKey;
  let attacker: SeededKey;
  let digits = 200_000_000_000_000;

  const number = () => String(++digits);
  const storedSenders = (organizationId: string) =>
    world.sql<{ phone_number_id: string | null; provider_account_id: string | null }>(`SELECT phone_number_id, provider_account_id FROM "${world.schema('outbox-dispatcher')}".senders WHERE organization_id = $1 AND removed_at IS NULL`, [organizationId]);
  const reads = async (provider: 'meta' | 'nylas' | 'unipile', operation: string) => (await sandbox.get<{ calls: { operation: string; context: Record<string, string>; outcome: string }[] }>(`/sandbox/control/${provider}/received`)).calls.filter((c) => c.operation === operation);
  const whatsapp = (phoneNumberId: string, accessToken: string) => ({ channel: 'whatsapp', phone_number_id: phoneNumberId, display_phone_number: '5511912345678', business_account_id: '100000000000001', access_token: accessToken });

  beforeAll(async () => {
    world = await createTestWorld('gwsenders');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox, { NYLAS_API_BASE_URL: sandbox.url, UNIPILE_API_BASE_URL: sandbox.url });
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    victim = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
    attacker = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
  }, 60_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  describe('WhatsApp', () => {
    it('refuses a number claimed with a token that cannot read it, before anything is stored, and reads it at Graph with that token', async () => {
      const victims = number();
      await sandbox.post('/sandbox/meta/numbers', { phone_number_id: victims, access_token: 'victim-token' });
      const res = await http('POST', '/senders', { secret: attacker.secret, json: whatsapp(victims, 'guessed-token') });
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'sender_unverified', details: { provider: 'meta', provider_status: 401, provider_code: 190 } });
      expect(await storedSenders(attacker.organizationId)).toEqual([]);
      expect((await reads('meta', 'phone_number')).filter((c) => c.context.phone_number_id === victims)).toEqual([expect.objectContaining({ outcome: 'rejected' })]);
    });

    it('answers the same refusal for a number of another business and a number that does not exist (no existence oracle), also once the number is registered', async () => {
      const victims = number();
      const attackers = number();
      await sandbox.post('/sandbox/meta/numbers', { phone_number_id: victims, access_token: 'victim-token-2' });
      await sandbox.post('/sandbox/meta/numbers', { phone_number_id: attackers, access_token: 'attacker-token' });
      const before = await http('POST', '/senders', { secret: attacker.secret, json: whatsapp(victims, 'attacker-token') });
      const nowhere = await http('POST', '/senders', { secret: attacker.secret, json: whatsapp(number(), 'attacker-token') });
      expect((await http('POST', '/senders', { secret: victim.secret, json: whatsapp(victims, 'victim-token-2') })).status).toBe(201);
      const after = await http('POST', '/senders', { secret: attacker.secret, json: whatsapp(victims, 'attacker-token') });
      const shape = (res: { status: number; body: ErrorEnvelope }) => ({ status: res.status, code: res.body.error.code, message: res.body.error.message, details: res.body.error.details });
      expect(shape(before)).toEqual({ status: 422, code: 'sender_unverified', message: expect.any(String), details: { provider: 'meta', provider_status: 400, provider_code: 100 } });
      expect(shape(nowhere)).toEqual(shape(before));
      expect(shape(after)).toEqual(shape(before));
      expect(await storedSenders(attacker.organizationId)).toEqual([]);
      expect(await storedSenders(victim.organizationId)).toEqual(expect.arrayContaining([expect.objectContaining({ phone_number_id: victims })]));
    });

    it('tells a caller who proved the token owns the number that it is registered already (409)', async () => {
      const shared = number();
      await sandbox.post('/sandbox/meta/numbers', { phone_number_id: shared, access_token: 'shared-token' });
      expect((await http('POST', '/senders', { secret: victim.secret, json: whatsapp(shared, 'shared-token') })).status).toBe(201);
      const again = await http('POST', '/senders', { secret: attacker.secret, json: whatsapp(shared, 'shared-token') });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('conflict');
    });

    it('answers 400, not 503, to a token that cannot travel in a header (a line break)', async () => {
      const res = await http('POST', '/senders', { secret: attacker.secret, json: whatsapp(number(), 'tok\nen') });
      expect([res.status, res.body.error.code, res.body.error.details]).toEqual([400, 'validation_failed', [{ field: 'access_token', problems: ['must not contain control characters'] }]]);
    });

    it('keeps the old token when a new one cannot read the sender’s number', async () => {
      const own = number();
      await sandbox.post('/sandbox/meta/numbers', { phone_number_id: own, access_token: 'first-token' });
      const created = await http('POST', '/senders', { secret: victim.secret, json: whatsapp(own, 'first-token') });
      const res = await http('PATCH', `/senders/${created.body.id}`, { secret: victim.secret, json: { access_token: 'someone-elses-token' } });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('sender_unverified');
      expect((await d.senders.credentialsFor(created.body.id))?.secrets.access_token).toBe('first-token');
    });
  });

  describe('email (Nylas grant) and LinkedIn (Unipile account)', () => {
    it('refuses a grant the API key cannot read, and adds one it can', async () => {
      const grant = `grant-${randomUUID()}`;
      await sandbox.post('/sandbox/nylas/grants', { grant_id: grant, api_key: 'victim-nylas-key' });
      await sandbox.post('/sandbox/nylas/grants', { grant_id: `grant-${randomUUID()}`, api_key: 'attacker-nylas-key' });
      const account = { channel: 'email', account_id: grant, address: 'sales@victim.example', provider: 'google' };
      const unknownKey = await http('POST', '/senders/accounts', { secret: attacker.secret, json: { ...account, api_key: 'made-up-key' } });
      const otherApplication = await http('POST', '/senders/accounts', { secret: attacker.secret, json: { ...account, api_key: 'attacker-nylas-key' } });
      expect([unknownKey.status, unknownKey.body.error.code, unknownKey.body.error.details.provider_status]).toEqual([422, 'sender_unverified', 401]);
      expect([otherApplication.status, otherApplication.body.error.code, otherApplication.body.error.details.provider_status]).toEqual([422, 'sender_unverified', 404]);
      expect(await storedSenders(attacker.organizationId)).toEqual([]);
      const owned = await http('POST', '/senders/accounts', { secret: victim.secret, json: { ...account, api_key: 'victim-nylas-key' } });
      expect(owned.status).toBe(201);
      expect((await reads('nylas', 'grant')).filter((c) => c.context.grant_id === grant).map((c) => c.outcome)).toEqual(['rejected', 'not_found', 'accepted']);
    });

    it('refuses a Unipile account the API key cannot read, and adds one it can', async () => {
      const id = `acct-${randomUUID()}`;
      await sandbox.post('/sandbox/unipile/accounts', { account_id: id, api_key: 'victim-unipile-key' });
      const account = { channel: 'linkedin', account_id: id, address: 'ACoAAVICTIM' };
      const refused = await http('POST', '/senders/accounts', { secret: attacker.secret, json: { ...account, api_key: 'made-up-key' } });
      expect([refused.status, refused.body.error.code]).toEqual([422, 'sender_unverified']);
      expect(await storedSenders(attacker.organizationId)).toEqual([]);
      expect((await http('POST', '/senders/accounts', { secret: victim.secret, json: { ...account, api_key: 'victim-unipile-key' } })).status).toBe(201);
    });
  });
});
