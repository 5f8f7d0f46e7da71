import { createHash } from 'node:crypto';
import { approvedHash, canonicalJson } from '../canonical-json.js';

describe('canonicalJson', () => {
  it.each([
    [{ b: 1, a: 2 }, '{"a":2,"b":1}'],
    [{ to: 'x@acme.example', body: 'Hi', subject: 'S' }, '{"body":"Hi","subject":"S","to":"x@acme.example"}'],
    [{ z: { y: 1, x: [3, { d: 1, c: 2 }] } }, '{"z":{"x":[3,{"c":2,"d":1}],"y":1}}'],
    [{ a: undefined, b: null }, '{"b":null}'],
    [{ text: 'Olá, João — 20 min?' }, '{"text":"Olá, João — 20 min?"}'],
    [{ quote: 'say "hi"\n' }, '{"quote":"say \\"hi\\"\\n"}'],
    [[], '[]'],
    ['s', '"s"'],
  ])('writes %j as %s (sorted keys, no spaces, UTF-8 as is)', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });
});

describe('approvedHash', () => {
  it('is the SHA-256 hex of the UTF-8 bytes of the canonical JSON, whatever the key order', () => {
    const payload = { to: 'joão@acme.example', body: 'Olá', subject: 'Café' };
    const expected = createHash('sha256').update(Buffer.from('{"body":"Olá","subject":"Café","to":"joão@acme.example"}', 'utf8')).digest('hex');
    expect(approvedHash(payload)).toBe(expected);
    expect(approvedHash({ subject: 'Café', body: 'Olá', to: 'joão@acme.example' })).toBe(expected);
    expect(approvedHash({ ...payload, body: 'Olá!' })).not.toBe(expected);
  });
});
