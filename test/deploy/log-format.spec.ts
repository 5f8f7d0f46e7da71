import { renderLogLine } from '../../scripts/start/log-format.js';

const plain = { color: false, verbose: false, tagWidth: 9 };
const time = '2026-01-02T03:04:05.678Z';
/** The local clock time the renderer shows for `time`. */
const clock = (() => {
  const d = new Date(time);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
})();

describe('renderLogLine', () => {
  it.each([
    [
      'a pino record as time, level, tag, message and its key fields first',
      { level: 'info', time, service: 'gateway', msg: 'gateway ready', url: 'http://127.0.0.1:3000', event: 'service.started' },
      `${clock} INFO  [gateway  ] gateway ready  event=service.started url=http://127.0.0.1:3000`,
    ],
    ["pino's numeric levels", { level: 40, time, msg: 'slow', organization_id: 'org-1' }, `${clock} WARN  [gateway  ] slow  organization_id=org-1`],
    ['a NestJS context before the message, and quoted strings with spaces', { level: 'warn', time, context: 'ExceptionsHandler', msg: 'odd', reason: 'two words' }, `${clock} WARN  [gateway  ] ExceptionsHandler: odd  reason="two words"`],
    [
      'an error object as type(code): message',
      { level: 'warn', time, msg: 'relay batch failed', event: 'bus.relay_failed', err: { type: 'Error', code: 'ECONNRESET', message: 'socket hang up' } },
      `${clock} WARN  [gateway  ] relay batch failed  event=bus.relay_failed err=Error(ECONNRESET): socket hang up`,
    ],
    ['at most six fields, the rest counted', { level: 'info', time, msg: 'm', a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8 }, `${clock} INFO  [gateway  ] m  a=1 b=2 c=3 d=4 e=5 f=6 +2`],
  ])('renders %s', (_case, record, expected) => {
    expect(renderLogLine('gateway', '', JSON.stringify(record), plain)).toBe(expected);
  });

  it.each([
    ['plain text', 'Debugger listening on ws://x'],
    ['JSON that is not a log record', '[1,2,3]'],
    ['broken JSON', '{"level": "info", '],
  ])('passes %s through behind the tag', (_case, line) => {
    expect(renderLogLine('sandbox', '', line, plain)).toBe(`[sandbox  ] ${line}`);
  });

  it('hides NestJS start-up chatter unless verbose, but never its warnings', () => {
    const chatter = JSON.stringify({ level: 'info', time, context: 'RouterExplorer', msg: 'Mapped {/me, GET} route' });
    const warning = JSON.stringify({ level: 'warn', time, context: 'NestApplication', msg: 'something odd' });
    expect(renderLogLine('gateway', '', chatter, plain)).toBeUndefined();
    expect(renderLogLine('gateway', '', chatter, { ...plain, verbose: true })).toContain('RouterExplorer: Mapped {/me, GET} route');
    expect(renderLogLine('gateway', '', warning, plain)).toContain('NestApplication: something odd');
  });

  it('prints the stack of an error under its line, and truncates long values', () => {
    const record = { level: 'error', time, msg: 'boom', err: { type: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at a (f.ts:1:1)\n    at b (g.ts:2:2)' }, body: 'y'.repeat(300) };
    const [head, ...stack] = (renderLogLine('gateway', '', JSON.stringify(record), plain) ?? '').split('\n');
    expect(head).toContain('err=TypeError: x is undefined');
    expect(head).toMatch(/body=y{119}…$/);
    expect(stack.map((s) => s.trim())).toEqual(['at a (f.ts:1:1)', 'at b (g.ts:2:2)']);
  });

  it('colors the tag and the level only when asked', () => {
    const line = JSON.stringify({ level: 'error', time, msg: 'x' });
    expect(renderLogLine('gateway', '\x1b[36m', line, plain)).not.toContain('\x1b[');
    expect(renderLogLine('gateway', '\x1b[36m', line, { ...plain, color: true })).toContain('\x1b[36m[gateway  ]\x1b[0m');
  });
});
