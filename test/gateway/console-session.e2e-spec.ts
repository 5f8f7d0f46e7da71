import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHash } from 'node:crypto';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { gatewayBuilders, gatewayTable, httpClient, type SeededKey } from './gateway-world.js';

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** The `tp_session` cookie of a `Set-Cookie` header, split into its value and attributes. */
function parseSetCookie(header: string | null): { value: string; attributes: string[] } {
  expect(header).toBeTruthy();
  const [pair, ...attributes] = header!.split(';').map((p) => p.trim());
  expect(pair!.startsWith('tp_session=')).toBe(true);
  return { value: pair!.slice('tp_session='.length), attributes };
}

/**
 * The operator console's sign-in (issue 20): a member's API key is exchanged for an HttpOnly,
 * SameSite=Strict session cookie that every route accepts in place of the bearer key, recorded
 * as that member; state-changing requests made with it need the CSRF token and our own origin;
 * sign-out, a revoked key and the absolute lifetime each end it.
 */
describe('Console sessions', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let base: string;
  let http: ReturnType<typeof httpClient>;
  let build: ReturnType<typeof gatewayBuilders>;
  let admin: SeededKey;

  beforeAll(async () => {
    world = await createTestWorld('console_sessions');
    await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '200' })));
    const config = world.config(GatewayConfig, { CONSOLE_SESSION_TTL_S: '3600' });
    app = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    base = await app.getUrl();
    http = httpClient(base);
    build = gatewayBuilders(app);
    admin = await build.organizationWithKey({ scopes: ['admin', 'messaging:read', 'messaging:write'] });
  });
  afterAll(() => world.close());

  /** Signs in with `secret`; answers the session body, the cookie header to send back, and the raw Set-Cookie. */
  async function signIn(secret: string) {
    const res = await http('POST', '/sessions', { json: { api_key: secret } });
    expect(res.status).toBe(201);
    const setCookie = res.headers.get('set-cookie');
    const { value } = parseSetCookie(setCookie);
    return { session: res.body, cookie: `tp_session=${value}`, token: value, setCookie: setCookie! };
  }

  describe('POST /sessions', () => {
    it('sets an HttpOnly, SameSite=Strict cookie for the whole gateway with the TTL, and stores only hashes of the token and the CSRF token', async () => {
      const { session, token, setCookie } = await signIn(admin.secret);
      const { attributes } = parseSetCookie(setCookie);
      expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=3600']));
      expect(attributes).not.toContain('Secure');
      expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(32);
      expect(session).toEqual({
        id: expect.any(String),
        member_id: admin.memberId,
        organization_id: admin.organizationId,
        role: 'admin',
        scopes: ['messaging:read', 'messaging:write', 'admin'],
        expires_at: expect.any(String),
        csrf_token: expect.any(String),
      });
      const ttl = Date.parse(session.expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(3590_000);
      expect(ttl).toBeLessThanOrEqual(3600_000);

      const rows = await world.sql<{ api_key_id: string; member_id: string; token_hash: Buffer; csrf_hash: Buffer }>(`SELECT * FROM ${gatewayTable(world, 'console_sessions')} WHERE id = $1`, [session.id]);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ api_key_id: admin.apiKeyId, member_id: admin.memberId });
      expect(rows[0]!.token_hash.equals(sha256(token))).toBe(true);
      expect(rows[0]!.csrf_hash.equals(sha256(session.csrf_token))).toBe(true);
      expect(JSON.stringify(rows[0])).not.toContain(token);
      expect(JSON.stringify(rows[0])).not.toContain(session.csrf_token);
    });

    it('marks the cookie Secure when the request came over https (as a proxy reports it)', async () => {
      const res = await http('POST', '/sessions', { json: { api_key: admin.secret }, headers: { 'x-forwarded-proto': 'https' } });
      expect(res.status).toBe(201);
      expect(parseSetCookie(res.headers.get('set-cookie')).attributes).toContain('Secure');
    });

    it.each([
      ['an unknown key', { api_key: 'tp_this-is-not-a-key-of-ours-at-all-00000000000' }, 401, 'unauthorized'],
      ['a value that is not a key', { api_key: 'hunter2' }, 401, 'unauthorized'],
      ['no api_key', {}, 400, 'validation_failed'],
      ['an api_key that is not a string', { api_key: 42 }, 400, 'validation_failed'],
      ['an unknown field', { api_key: 'tp_x', remember_me: true }, 400, 'validation_failed'],
    ])('refuses %s with the error envelope and sets no cookie', async (_name, body, status, code) => {
      const before = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${gatewayTable(world, 'console_sessions')}`);
      const res = await http('POST', '/sessions', { json: body });
      expect(res.status).toBe(status);
      expect(res.body.error.code).toBe(code);
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(await world.sql(`SELECT count(*)::int AS n FROM ${gatewayTable(world, 'console_sessions')}`)).toEqual(before);
    });

    it('refuses a revoked key with 401', async () => {
      const key = await build.organizationWithKey({ organizationId: admin.organizationId, role: 'operator', scopes: ['messaging:read'], email: 'revoked@example.com' });
      await build.apiKeys.revoke(key.apiKeyId, null);
      const res = await http('POST', '/sessions', { json: { api_key: key.secret } });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    });

    it('refuses a sign-in posted from another origin (403 csrf)', async () => {
      const res = await http('POST', '/sessions', { json: { api_key: admin.secret }, headers: { origin: 'https://evil.example' } });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', details: { reason: 'csrf' } });
      expect(res.headers.get('set-cookie')).toBeNull();
    });
  });

  describe('the cookie as a credential', () => {
    it('authenticates any route as the member who signed in, with the key scopes', async () => {
      const { cookie } = await signIn(admin.secret);
      const me = await http('GET', '/me', { headers: { cookie } });
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ organization_id: admin.organizationId, api_key_id: admin.apiKeyId, created_by: { member_id: admin.memberId, role: 'admin' } });
      expect((await http('GET', '/me', { headers: { cookie: 'tp_session=not-a-session' } })).status).toBe(401);
      expect((await http('GET', '/me')).status).toBe(401);
    });

    it('GET /sessions/current answers the session with the same CSRF token (a reloaded page recovers it)', async () => {
      const { session, cookie } = await signIn(admin.secret);
      const res = await http('GET', '/sessions/current', { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(session);
      // With the bearer key there is no session to show.
      const bearer = await http('GET', '/sessions/current', { secret: admin.secret });
      expect(bearer.status).toBe(401);
      expect(bearer.body.error.code).toBe('unauthorized');
    });

    it('refuses an unsafe request without or with a wrong X-CSRF-Token (403 csrf, nothing done) and performs it with the right one, recorded as the member', async () => {
      const { session, cookie } = await signIn(admin.secret);
      const keys = async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${gatewayTable(world, 'api_keys')} WHERE name = 'made from the console'`))[0]!.n;
      const body = { name: 'made from the console', scopes: ['messaging:read'] };

      for (const headers of [{ cookie }, { cookie, 'x-csrf-token': 'wrong' }, { cookie, 'x-csrf-token': `${session.csrf_token}x` }] as Record<string, string>[]) {
        const res = await http('POST', '/api-keys', { headers, json: body });
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'forbidden', details: { reason: 'csrf' } });
      }
      expect(await keys()).toBe(0);

      const made = await http('POST', '/api-keys', { headers: { cookie, 'x-csrf-token': session.csrf_token, origin: base }, json: body });
      expect(made.status).toBe(201);
      expect(made.body.created_by_member_id).toBe(admin.memberId);
      expect(await keys()).toBe(1);
      // Reads need no CSRF token.
      expect((await http('GET', '/api-keys', { headers: { cookie } })).status).toBe(200);
    });

    it('refuses an unsafe request from another origin even with the right CSRF token', async () => {
      const { session, cookie } = await signIn(admin.secret);
      const res = await http('POST', '/contacts', { headers: { cookie, 'x-csrf-token': session.csrf_token, origin: 'https://evil.example' }, json: { name: 'Nope', phone: '+5511988887777' } });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', details: { reason: 'csrf' } });
    });

    it('does not take a client-sent X-Forwarded-Host/-Proto as our origin (no proxy configured): a forged pair is still another origin', async () => {
      const { session, cookie } = await signIn(admin.secret);
      const headers = { cookie, 'x-csrf-token': session.csrf_token, origin: 'https://evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
      const res = await http('POST', '/contacts', { headers, json: { name: 'Forged Origin', phone: '+5511966665555' } });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', details: { reason: 'csrf' } });
    });

    it('takes X-Forwarded-Host/-Proto as our origin only with TRUST_FORWARDED_HEADERS (a proxy in front sets them)', async () => {
      const proxyConfig = world.config(GatewayConfig, { CONSOLE_SESSION_TTL_S: '3600', TRUST_FORWARDED_HEADERS: 'true' });
      const proxied = await world.start(GatewayModule.forRoot(proxyConfig), gatewayStartOptions(proxyConfig));
      const viaProxy = httpClient(await proxied.getUrl());
      const { session, cookie } = await signIn(admin.secret);
      const forwarded = { cookie, 'x-csrf-token': session.csrf_token, 'x-forwarded-host': 'console.example', 'x-forwarded-proto': 'https' };
      const made = await viaProxy('POST', '/contacts', { headers: { ...forwarded, origin: 'https://console.example' }, json: { name: 'Via Proxy', phone: '+5511955554444' } });
      expect([200, 201]).toContain(made.status);
      const refused = await viaProxy('POST', '/contacts', { headers: { ...forwarded, origin: 'https://evil.example' }, json: { name: 'Via Proxy', phone: '+5511955554443' } });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'forbidden', details: { reason: 'csrf' } });
    });

    it('leaves bearer requests as they were: no CSRF token needed, and a cookie riding along is ignored', async () => {
      const res = await http('POST', '/contacts', { secret: admin.secret, headers: { cookie: 'tp_session=garbage', origin: 'https://elsewhere.example' }, json: { name: 'Bearer Person', phone: '+5511977776666' } });
      expect([200, 201]).toContain(res.status);
    });

    it('opens the event stream with the cookie, and a contact created from the console (cookie + CSRF) shows up on it', async () => {
      const { session, cookie } = await signIn(admin.secret);
      const controller = new AbortController();
      const stream = await fetch(`${base}/events/stream?types=messaging.contact.created`, { headers: { cookie }, signal: controller.signal });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toContain('text/event-stream');
      const created = await http('POST', '/contacts', { headers: { cookie, 'x-csrf-token': session.csrf_token }, json: { name: 'Console Person', phone: '+5511966665555' } });
      expect([200, 201]).toContain(created.status);
      const reader = stream.body!.getReader();
      let text = '';
      const deadline = setTimeout(() => controller.abort(), 10_000);
      try {
        while (!text.includes(created.body.id)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += new TextDecoder().decode(value);
        }
      } catch {
        // aborted at the deadline
      } finally {
        clearTimeout(deadline);
        controller.abort();
      }
      expect(text).toContain('event: messaging.contact.created');
      expect(text).toContain(created.body.id);
    });
  });

  describe('the end of a session', () => {
    it('DELETE /sessions/current needs the CSRF token, then revokes the session, clears the cookie, and the cookie answers 401 after', async () => {
      const { session, cookie } = await signIn(admin.secret);
      const refused = await http('DELETE', '/sessions/current', { headers: { cookie } });
      expect(refused.status).toBe(403);
      expect(refused.body.error.details).toEqual({ reason: 'csrf' });

      const res = await fetch(`${base}/sessions/current`, { method: 'DELETE', headers: { cookie, 'x-csrf-token': session.csrf_token } });
      expect(res.status).toBe(204);
      expect(await res.text()).toBe('');
      const cleared = parseSetCookie(res.headers.get('set-cookie'));
      expect(cleared.value).toBe('');
      expect(cleared.attributes).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=0']));
      const [row] = await world.sql<{ revoked_at: Date | null }>(`SELECT revoked_at FROM ${gatewayTable(world, 'console_sessions')} WHERE id = $1`, [session.id]);
      expect(row!.revoked_at).toBeInstanceOf(Date);

      for (const path of ['/me', '/sessions/current']) {
        const after = await http('GET', path, { headers: { cookie } });
        expect(after.status).toBe(401);
        expect(after.body.error.code).toBe('unauthorized');
      }
    });

    it('ends every session of a key the moment the key is revoked', async () => {
      const operator = await build.organizationWithKey({ organizationId: admin.organizationId, role: 'operator', scopes: ['messaging:read'], email: 'operator@example.com' });
      const { cookie } = await signIn(operator.secret);
      expect((await http('GET', '/me', { headers: { cookie } })).status).toBe(200);
      await build.apiKeys.revoke(operator.apiKeyId, operator.organizationId);
      const res = await http('GET', '/me', { headers: { cookie } });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    });

    it('ends a session when its member is removed, and follows a demotion at once', async () => {
      const person = await build.organizationWithKey({ organizationId: admin.organizationId, role: 'admin', scopes: ['admin'], email: 'leaver@example.com' });
      const { cookie } = await signIn(person.secret);
      expect((await http('GET', '/members', { headers: { cookie } })).status).toBe(200);
      await build.members.update(admin.organizationId, person.memberId, { role: 'operator' });
      expect((await http('GET', '/members', { headers: { cookie } })).status).toBe(403);
      expect((await http('GET', '/sessions/current', { headers: { cookie } })).body.role).toBe('operator');
      await build.members.remove(admin.organizationId, person.memberId);
      expect([401, 403]).toContain((await http('GET', '/me', { headers: { cookie } })).status);
    });

    it('answers 401 once the session is past its absolute lifetime', async () => {
      const { session, cookie } = await signIn(admin.secret);
      expect((await http('GET', '/me', { headers: { cookie } })).status).toBe(200);
      await world.sql(`UPDATE ${gatewayTable(world, 'console_sessions')} SET expires_at = now() - interval '1 second' WHERE id = $1`, [session.id]);
      const res = await http('GET', '/me', { headers: { cookie } });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    });
  });

  describe('/console', () => {
    it('answers 503 with the envelope and says to build the console when its directory has no build', async () => {
      // This process's CONSOLE_DIR is the repository default; point a second gateway at an empty directory.
      const config = world.config(GatewayConfig, { CONSOLE_DIR: '/nonexistent/touchpoint-console' });
      const other = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
      const url = await other.getUrl();
      for (const path of ['/console', '/console/', '/console/review', '/console/assets/index-abc.js']) {
        const res = await fetch(`${url}${path}`);
        expect(res.status).toBe(503);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('service_unavailable');
        expect(body.error.message).toContain('npm run build');
      }
    });
  });
});
