import { loneSurrogateFields, nulFields } from '../unstorable-characters.js';
import { loggedTarget } from '../request-context.js';

describe(nulFields.name, () => {
  it.each([
    ['a clean body', { name: 'Ana', tags: ['vip'], graph: { nodes: [{ id: 'n1' }] } }, []],
    ['a top-level field', { name: 'a\u0000b' }, ['name']],
    ['a nested array item', { graph: { nodes: [{ id: 'ok' }, { id: 'x\u0000' }] } }, ['graph.nodes.1.id']],
    ['an object key', { fields: { 'k\u0000': 'v' } }, ['fields.k\\0']],
    ['several fields, sorted', { b: '\u0000', a: '\u0000' }, ['a', 'b']],
    ['a bare string body', 'a\u0000', ['(body)']],
    ['numbers, booleans and nulls', { n: 1, t: true, z: null }, []],
  ])('finds %s', (_case, value, expected) => {
    expect(nulFields(value)).toEqual(expected);
  });

  it('walks a body nested deeper than the stack would allow without overflowing', () => {
    let deep: Record<string, unknown> = { leaf: 'x' };
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    expect(() => nulFields(deep)).not.toThrow();
  });
});

describe(loneSurrogateFields.name, () => {
  it.each([
    ['a clean body, emoji included', { text: 'oi \u{1F600}', tags: ['\u{1F1E7}\u{1F1F7}'] }, []],
    ['a text with half a pair', { text: 'a\ud800b' }, ['text']],
    ['a text ending in a high surrogate', { text: 'STOP \uD83D' }, ['text']],
    ['a low surrogate alone in a nested array item', { graph: { nodes: [{ id: 'ok' }, { id: '\uDE00x' }] } }, ['graph.nodes.1.id']],
    ['an object key', { fields: { 'k\uD800': 'v' } }, ['fields.k\uD800']],
    ['a bare string body', '\uDC00', ['(body)']],
  ])('finds %s', (_case, value, expected) => {
    expect(loneSurrogateFields(value)).toEqual(expected);
  });
});

describe(loggedTarget.name, () => {
  it.each([
    ['/me', '/me', '/me'],
    ['/webhooks/meta', '/webhooks/meta?hub.mode=subscribe&hub.verify_token=s3cret&hub.challenge=1', '/webhooks/meta?hub.mode=[redacted]&hub.verify_token=[redacted]&hub.challenge=[redacted]'],
    ['/nylas/email/unsubscribe', '/nylas/email/unsubscribe?token=abc.def', '/nylas/email/unsubscribe?token=[redacted]'],
    ['/contacts/:contact_id', '/contacts/5f0c?', '/contacts/:contact_id'],
    ['unmatched', '/nowhere/+5592988887777?q=Ana%20Lima', 'unmatched?q=[redacted]'],
  ])('logs %s without the values of %s', (route, url, expected) => {
    expect(loggedTarget(route, url)).toBe(expected);
  });
});
