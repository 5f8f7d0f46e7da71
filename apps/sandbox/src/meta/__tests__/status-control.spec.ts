import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig } from '@touchpoint/config';
import { startSandbox } from '../../sandbox.app.js';
import { SandboxConfig } from '../../sandbox.config.js';

/** The part of a status webhook these tests look at. */
interface StatusWebhook {
  phone_number_id: string;
  wamid: string;
  status: string;
  recipient_id: string;
}

/**
 * `POST /sandbox/meta/status`: a status for a message the sandbox sent comes from the number that
 * sent it and names the person it went to, as Meta's would, unless the caller says otherwise.
 */
describe('Meta sandbox status control', () => {
  const businessNumber = '100000000000777';
  let sut: NestFastifyApplication;
  let url: string;
  let gateway: http.Server;
  let received: StatusWebhook[] = [];

  beforeAll(async () => {
    gateway = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString()));
      req.on('end', () => {
        const value = JSON.parse(raw).entry[0].changes[0].value;
        const status = value.statuses?.[0];
        if (status) received.push({ phone_number_id: value.metadata.phone_number_id, wamid: status.id, status: status.status, recipient_id: status.recipient_id });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    const gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    sut = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent', GATEWAY_URL: gatewayUrl }));
    url = (await sut.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await sut.close();
    await new Promise((resolve) => gateway.close(resolve));
  });

  beforeEach(async () => {
    await post('/sandbox/meta/reset', {});
    await post('/sandbox/meta/numbers', { phone_number_id: businessNumber, access_token: 'tok' });
    // Only the statuses these tests ask for.
    await post('/sandbox/meta/settings', { status_webhooks: false, service_window: false, webhook_retries: 0 });
    received = [];
  });

  async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tok' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Sends a text from the business number through the Graph stand-in; answers its wamid. */
  async function send(to: string, callbackData?: string): Promise<string> {
    const res = await post(`/v21.0/${businessNumber}/messages`, { messaging_product: 'whatsapp', to, type: 'text', text: { body: 'oi' }, ...(callbackData ? { biz_opaque_callback_data: callbackData } : {}) });
    expect(res.status).toBe(200);
    return (res.body.messages as { id: string }[])[0].id;
  }

  it('signs a status for a wamid it sent with that send’s number and recipient when the body names neither', async () => {
    const wamid = await send('5511922220001');
    expect((await post('/sandbox/meta/status', { wamid, status: 'read' })).body).toMatchObject({ status: 200 });
    expect(received).toEqual([{ phone_number_id: businessNumber, wamid, status: 'read', recipient_id: '5511922220001' }]);
  });

  it('finds the send by its biz_opaque_callback_data when the body gives no wamid', async () => {
    const wamid = await send('5511922220002', 'entry-42');
    await post('/sandbox/meta/status', { biz_opaque_callback_data: 'entry-42', status: 'delivered' });
    expect(received).toEqual([{ phone_number_id: businessNumber, wamid, status: 'delivered', recipient_id: '5511922220002' }]);
  });

  it('keeps the phone_number_id and recipient_id the body gives', async () => {
    const wamid = await send('5511922220003');
    await post('/sandbox/meta/status', { wamid, status: 'read', phone_number_id: '100000000000002', recipient_id: '5511999990000' });
    expect(received).toEqual([{ phone_number_id: '100000000000002', wamid, status: 'read', recipient_id: '5511999990000' }]);
  });

  it('falls back to the fixtures’ number and recipient for a wamid it never issued', async () => {
    await post('/sandbox/meta/status', { wamid: 'wamid.unknown', status: 'read' });
    expect(received).toEqual([{ phone_number_id: '100000000000002', wamid: 'wamid.unknown', status: 'read', recipient_id: '5511987654321' }]);
  });

  it('answers 400 when neither wamid nor a known biz_opaque_callback_data names a message', async () => {
    expect((await post('/sandbox/meta/status', { biz_opaque_callback_data: 'never-sent', status: 'read' })).status).toBe(400);
  });
});
