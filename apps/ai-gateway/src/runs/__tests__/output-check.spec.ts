import type { AiOutputSchema } from '@touchpoint/contracts';
import { checkOutput } from '../output-check.js';

const decide: AiOutputSchema = { required: { type: 'string', rationale: 'string' } };
const typed: AiOutputSchema = { required: { n: 'number', i: 'integer', b: 'boolean', a: 'array', o: 'object', s: 'string' } };
const okTyped = { n: 0.5, i: 3, b: false, a: [], o: {}, s: '' };

describe('checkOutput', () => {
  it.each([
    ['a plain object', '{"type":"email","rationale":"asked"}', { type: 'email', rationale: 'asked' }],
    ['extra fields, kept untouched', '{"type":"wait","rationale":"r","days":"four","x":{"y":1}}', { type: 'wait', rationale: 'r', days: 'four', x: { y: 1 } }],
    ['surrounding whitespace', '  \n{"type":"stop","rationale":"done"}\n ', { type: 'stop', rationale: 'done' }],
    ['one ```json fence', '```json\n{"type":"email","rationale":"r"}\n```', { type: 'email', rationale: 'r' }],
    ['an empty string value (the caller owns emptiness)', '{"type":"","rationale":""}', { type: '', rationale: '' }],
    ['half an emoji written as a lone \\ud83d escape, made well-formed', '{"type":"email","rationale":"asked \\ud83d"}', { type: 'email', rationale: 'asked \uFFFD' }],
    ['a NUL written as a \\u0000 escape, which jsonb refuses, replaced', '{"type":"email","rationale":"as\\u0000ked","tags":["a\\u0000"]}', { type: 'email', rationale: 'as\uFFFDked', tags: ['a\uFFFD'] }],
  ])('accepts %s', (_name, content, output) => {
    expect(checkOutput(content, decide)).toEqual({ valid: true, output });
  });

  it.each([
    ['null content', null, 'empty output'],
    ['empty content', '   ', 'empty output'],
    ['prose', 'Sure, I would email them.', 'output is not valid JSON'],
    ['truncated JSON', '{"type":"email","rationale":"r', 'output is not valid JSON'],
    ['an array', '[{"type":"email"}]', 'output is not a JSON object'],
    ['a string', '"email"', 'output is not a JSON object'],
    ['a missing field', '{"type":"email"}', 'missing required field "rationale"'],
    ['a null field', '{"type":"email","rationale":null}', 'missing required field "rationale"'],
    ['two problems', '{"rationale":7}', 'missing required field "type"; field "rationale" must be a string, got number'],
  ])('refuses %s', (_name, content, reason) => {
    expect(checkOutput(content, decide)).toMatchObject({ valid: false, reason });
  });

  it('accepts every type when it matches', () => {
    expect(checkOutput(JSON.stringify(okTyped), typed)).toEqual({ valid: true, output: okTyped });
  });

  it.each([
    ['n', 'x', 'field "n" must be a number, got string'],
    ['i', 1.5, 'field "i" must be an integer, got number'],
    ['b', 'true', 'field "b" must be a boolean, got string'],
    ['a', {}, 'field "a" must be an array, got object'],
    ['o', [], 'field "o" must be an object, got array'],
    ['s', 1, 'field "s" must be a string, got number'],
  ])('refuses %s = %j', (field, value, reason) => {
    expect(checkOutput(JSON.stringify({ ...okTyped, [field]: value }), typed)).toMatchObject({ valid: false, reason });
  });

  it('requires nothing when the schema requires nothing', () => {
    expect(checkOutput('{}', { required: {} })).toEqual({ valid: true, output: {} });
  });
});
