import { createHash } from 'node:crypto';
import { approvedHash } from '../canonical-json.js';

describe('approvedHash', () => {
  it('is the SHA-256 hex of the UTF-8 bytes of the canonical JSON, whatever the key order', () => {
    const payload = { to: 'joão@acme.example', body: 'Olá', subject: 'Café' };
    const expected = createHash('sha256').update(Buffer.from('{"body":"Olá","subject":"Café","to":"joão@acme.example"}', 'utf8')).digest('hex');
    expect(approvedHash(payload)).toBe(expected);
    expect(approvedHash({ subject: 'Café', body: 'Olá', to: 'joão@acme.example' })).toBe(expected);
    expect(approvedHash({ ...payload, body: 'Olá!' })).not.toBe(expected);
  });
});
