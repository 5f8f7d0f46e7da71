import { canonicalJson } from '../index.js';

describe('canonicalJson', () => {
  it.each([
    [{ b: 1, a: 2 }, '{"a":2,"b":1}'],
    [{ to: 'x@acme.example', body: 'Hi', subject: 'S' }, '{"body":"Hi","subject":"S","to":"x@acme.example"}'],
    [{ z: { y: 1, x: [3, { d: 1, c: 2 }] } }, '{"z":{"x":[3,{"c":2,"d":1}],"y":1}}'],
    [{ a: undefined, b: null }, '{"b":null}'],
    [[1, undefined, 2], '[1,null,2]'],
    [{ text: 'Olá, João — 20 min?' }, '{"text":"Olá, João — 20 min?"}'],
    [{ quote: 'say "hi"\n' }, '{"quote":"say \\"hi\\"\\n"}'],
    [{ B: 1, a: 2, _: 3, é: 4 }, '{"B":1,"_":3,"a":2,"é":4}'],
    [{ n: 1.5, big: 1e21, neg: -0 }, '{"big":1e+21,"n":1.5,"neg":0}'],
    [[], '[]'],
    ['s', '"s"'],
    [undefined, 'null'],
  ])('writes %j as %s (sorted keys, no spaces, UTF-8 as is)', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it('refuses a circular structure', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    expect(() => canonicalJson(loop)).toThrow(TypeError);
  });
});
