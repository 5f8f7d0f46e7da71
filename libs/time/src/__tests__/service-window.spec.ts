import { insideServiceWindow, serviceWindowLeftMs, WHATSAPP_SERVICE_WINDOW_MS } from '../service-window.js';

describe('the WhatsApp customer-service window', () => {
  const now = new Date('2026-03-08T12:00:00Z');
  const ago = (ms: number) => new Date(now.getTime() - ms);

  it.each([
    ['never wrote', null, false],
    ['wrote a minute ago', ago(60_000), true],
    ['wrote 23 h 59 min ago', ago(WHATSAPP_SERVICE_WINDOW_MS - 60_000), true],
    ['wrote exactly 24 h ago (closed)', ago(WHATSAPP_SERVICE_WINDOW_MS), false],
    ['wrote 25 h ago', ago(WHATSAPP_SERVICE_WINDOW_MS + 3_600_000), false],
  ])('%s → open %s', (_label, lastInboundAt, open) => {
    expect(insideServiceWindow(lastInboundAt, now)).toBe(open);
  });

  it('counts the margin: 5 min left is open, but not with a 10 min margin', () => {
    const last = ago(WHATSAPP_SERVICE_WINDOW_MS - 5 * 60_000);
    expect(serviceWindowLeftMs(last, now)).toBe(5 * 60_000);
    expect(insideServiceWindow(last, now)).toBe(true);
    expect(insideServiceWindow(last, now, 10 * 60_000)).toBe(false);
  });
});
