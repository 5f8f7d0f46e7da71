import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig } from '@touchpoint/config';
import { eventually } from '@touchpoint/testing';
import { startSandbox } from '../../sandbox.app.js';
import { SandboxConfig } from '../../sandbox.config.js';

/** One webhook the stand-in gateway received: what it was about, and when (epoch ms). */
interface Received {
  at: number;
  status?: string;
  wamid?: string;
  inbound?: string;
}

/**
 * The Meta sandbox's webhook misdeliveries (for the chaos harness): a fraction of status and
 * inbound webhooks posted twice, late, or (statuses) in reverse order, picked from a seed.
 */
describe('Meta sandbox webhook faults', () => {
  let sut: NestFastifyApplication;
  let url: string;
  let gateway: http.Server;
  let received: Received[] = [];

  beforeAll(async () => {
    gateway = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString()));
      req.on('end', () => {
        const value = JSON.parse(raw).entry[0].changes[0].value;
        received.push({ at: Date.now(), status: value.statuses?.[0]?.status, wamid: value.statuses?.[0]?.id, inbound: value.messages?.[0]?.id });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    const gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    sut = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent', GATEWAY_URL: gatewayUrl }));
    url = (await sut.getUrl()).replace('[::1]', '127.0.0.1');
    await post('/sandbox/meta/numbers', { phone_number_id: '100000000000002', access_token: 'tok' });
  });

  afterAll(async () => {
    await sut.close();
    await new Promise((resolve) => gateway.close(resolve));
  });

  beforeEach(async () => {
    await post('/sandbox/meta/reset', {});
    await post('/sandbox/meta/numbers', { phone_number_id: '100000000000002', access_token: 'tok' });
    await post('/sandbox/meta/settings', { status_delay_ms: 30 });
    received = [];
  });

  async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Sends a text through the Graph stand-in; answers its wamid. */
  async function send(to: string): Promise<string> {
    const res = await post('/v21.0/100000000000002/messages', { messaging_product: 'whatsapp', to, type: 'text', text: { body: 'oi' } });
    return (res.body.messages as { id: string }[])[0].id;
  }

  const statusesOf = (wamid: string) => received.filter((r) => r.wamid === wamid).map((r) => r.status);

  it('fires every status once and in order when no fault is set', async () => {
    const wamid = await send('5511911110001');
    await eventually(() => statusesOf(wamid).length === 2, 5000, 20);
    await new Promise((r) => setTimeout(r, 300));
    expect(statusesOf(wamid)).toEqual(['sent', 'delivered']);
  });

  it('posts each status twice when duplicate is 1, the copy marked in the delivery list', async () => {
    await post('/sandbox/meta/settings', { webhook_faults: { duplicate: 1 } });
    const wamid = await send('5511911110002');
    await eventually(() => statusesOf(wamid).length === 4, 5000, 20);
    expect([...statusesOf(wamid)].sort()).toEqual(['delivered', 'delivered', 'sent', 'sent']);
    const { deliveries } = (await (await fetch(`${url}/sandbox/meta/webhooks`)).json()) as { deliveries: { fault?: string }[] };
    expect(deliveries.filter((d) => d.fault === 'duplicate')).toHaveLength(2);
  });

  it('fires the statuses in reverse order when out_of_order is 1', async () => {
    await post('/sandbox/meta/settings', { webhook_faults: { out_of_order: 1 } });
    const wamid = await send('5511911110003');
    await eventually(() => statusesOf(wamid).length === 2, 5000, 20);
    expect(statusesOf(wamid)).toEqual(['delivered', 'sent']);
  });

  it('holds an inbound webhook late_ms when late is 1, and the simulating call waits for it', async () => {
    await post('/sandbox/meta/settings', { webhook_faults: { late: 1, late_ms: 600 } });
    const asked = Date.now();
    const res = await post('/sandbox/meta/inbound', { from: '5511911110004', text: 'oi' });
    expect(res.body).toMatchObject({ status: 200, fault: 'late' });
    const [hit] = received.filter((r) => r.inbound === res.body.message_id);
    expect(hit.at - asked).toBeGreaterThanOrEqual(600);
  });

  it('picks the same webhooks again for the same seed and a fraction below 1', async () => {
    const picks = async () => {
      await post('/sandbox/meta/reset', {});
      await post('/sandbox/meta/settings', { webhook_faults: { duplicate: 0.5, seed: 42 } });
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await post('/sandbox/meta/inbound', { from: '5511911110005', text: `m${i}` })).body.message_id as string);
      // Every copy is posted at most 1,000 ms after its original.
      await new Promise((r) => setTimeout(r, 1300));
      return ids.map((id) => received.filter((r) => r.inbound === id).length === 2);
    };
    const first = await picks();
    expect(first.filter(Boolean).length).toBeGreaterThan(0);
    expect(first.filter(Boolean).length).toBeLessThan(12);
    expect(await picks()).toEqual(first);
  });

  it.each([[{ duplicate: 1.5 }], [{ late: -0.1 }], [{ late_ms: 1.5 }], [{ out_of_order: 'half' }], ['all']])('answers 400 to webhook_faults %j', async (faults) => {
    expect((await post('/sandbox/meta/settings', { webhook_faults: faults })).status).toBe(400);
  });
});
