import { AI_DEFAULT_OUTPUT_SCHEMAS, AI_DEFAULT_TIMEOUT_MS } from '@touchpoint/contracts';
import { AppError } from '@touchpoint/errors';
import { parseRunRequest } from '../run-request.js';

const valid = {
  organization_id: 'org-1',
  kind: 'followup_classify',
  idempotency_key: 'step:1',
  input: { reply: 'yes', classes: [{ id: 'yes' }] },
  output_schema: AI_DEFAULT_OUTPUT_SCHEMAS.followup_classify,
};

function problemsOf(data: unknown): string[] {
  try {
    parseRunRequest(data);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('validation_failed');
    return ((err as AppError).details as { problems: string[] }).problems;
  }
}

describe('parseRunRequest', () => {
  it('accepts a valid request and fills the default timeout', () => {
    expect(parseRunRequest(valid)).toEqual({ ...valid, timeout_ms: AI_DEFAULT_TIMEOUT_MS });
  });

  it.each([
    ['no organization', { organization_id: '' }, 'organization_id is required'],
    ['no key', { idempotency_key: undefined }, 'idempotency_key is required'],
    ['a long key', { idempotency_key: 'k'.repeat(201) }, 'idempotency_key is longer than 200 characters'],
    ['an unknown kind', { kind: 'poem' }, expect.stringMatching(/^kind must be one of followup_classify/)],
    ['a tiny timeout', { timeout_ms: 5 }, 'timeout_ms must be an integer from 100 to 120000'],
    ['a fractional timeout', { timeout_ms: 1000.5 }, 'timeout_ms must be an integer from 100 to 120000'],
    ['no schema', { output_schema: undefined }, 'output_schema.required must map field names to types'],
    ['an unknown field type', { output_schema: { required: { class: 'enum' } } }, expect.stringMatching(/^output_schema.required.class must be one of/)],
    ['a field name that is not a name', { output_schema: { required: { 'a b': 'string' } } }, 'output_schema.required: "a b" is not a usable field name'],
    ['no input', { input: undefined }, 'input must be an object'],
    ['a class id with a colon', { input: { reply: 'x', classes: [{ id: 'a: b' }] } }, 'input.classes[0].id must not contain a colon or a line break'],
    ['a thread message without direction', { input: { reply: 'x', classes: [{ id: 'a' }], thread: [{ text: 'hi' }] } }, 'input.thread[0].direction must be inbound or outbound'],
  ])('refuses %s', (_name, change, problem) => {
    expect(problemsOf({ ...valid, ...change })).toContainEqual(problem);
  });

  it.each([
    ['outreach_decide', { context: { campaign: 'c' }, trigger: { reason: 'enrolled' }, allowed_actions: [] }, 'input.allowed_actions must be a non-empty array of action names'],
    ['outreach_decide', { trigger: { reason: 'enrolled' }, allowed_actions: ['email'] }, 'input.context is required (the outreach context sections)'],
    ['outreach_draft_email', { context: { campaign: 'c' }, objective: 'o' }, 'input.is_reply must be a boolean'],
    ['outreach_draft_linkedin', { context: { campaign: 'c' }, objective: 'o', type: 'email' }, 'input.type must be linkedin_connection or linkedin_message'],
    ['conversation_summary', { messages: [] }, 'input.messages must not be empty'],
    ['promise_resume', { promise: ' ' }, 'input.promise must not be empty'],
    ['followup_message', { objective: 'o', max_chars: 5 }, 'input.max_chars must be an integer ≥ 20'],
  ])('checks the %s input: %j', (kind, input, problem) => {
    expect(problemsOf({ ...valid, kind, input, output_schema: { required: {} } })).toContainEqual(problem);
  });
});
