import { AI_FIELD_TYPES, AI_KINDS, AI_DEFAULT_TIMEOUT_MS, AI_MAX_TIMEOUT_MS, type AiFieldType, type AiKind, type AiOutputSchema, type AiRunRequest } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { codePointLength } from '@touchpoint/text';
import { PROMPT_TEMPLATES } from '../prompts/prompt-templates.js';

/** Shortest provider deadline a request may ask for, ms. */
export const AI_MIN_TIMEOUT_MS = 100;
const MAX_KEY_CHARS = 200;
const MAX_REQUIRED_FIELDS = 30;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** An `ai.run` request after its shape was checked; `timeout_ms` is filled in. */
export type ValidRunRequest = AiRunRequest & { timeout_ms: number };

/**
 * Checks an `ai.run` payload: the envelope fields, the output schema, and the kind's prompt inputs.
 * @throws AppError validation_failed with `details.problems` (a list of sentences)
 */
export function parseRunRequest(data: unknown): ValidRunRequest {
  const problems: string[] = [];
  const body = (data && typeof data === 'object' ? data : {}) as Record<string, unknown>;
  const text = (field: string, max: number) => {
    const v = body[field];
    if (typeof v !== 'string' || v.trim() === '') problems.push(`${field} is required`);
    else if (codePointLength(v) > max) problems.push(`${field} is longer than ${max} characters`);
  };
  text('organization_id', 100);
  text('idempotency_key', MAX_KEY_CHARS);
  const kind = body.kind as AiKind;
  if (!AI_KINDS.includes(kind)) problems.push(`kind must be one of ${AI_KINDS.join(', ')}`);
  const timeout = body.timeout_ms ?? AI_DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeout) || (timeout as number) < AI_MIN_TIMEOUT_MS || (timeout as number) > AI_MAX_TIMEOUT_MS) {
    problems.push(`timeout_ms must be an integer from ${AI_MIN_TIMEOUT_MS} to ${AI_MAX_TIMEOUT_MS}`);
  }
  checkSchema(problems, body.output_schema);
  if (AI_KINDS.includes(kind)) problems.push(...PROMPT_TEMPLATES[kind].validate(body.input));
  if (problems.length) throw new AppError(ErrorCode.ValidationFailed, `invalid ai.run request: ${problems[0]}`, { problems });
  return {
    organization_id: body.organization_id as string,
    kind,
    idempotency_key: body.idempotency_key as string,
    input: body.input as AiRunRequest['input'],
    output_schema: { required: { ...(body.output_schema as AiOutputSchema).required } },
    timeout_ms: timeout as number,
  };
}

function checkSchema(problems: string[], schema: unknown): void {
  const required = (schema as { required?: unknown } | null)?.required;
  if (!schema || typeof schema !== 'object' || !required || typeof required !== 'object' || Array.isArray(required)) {
    problems.push('output_schema.required must map field names to types');
    return;
  }
  const entries = Object.entries(required as Record<string, unknown>);
  if (entries.length > MAX_REQUIRED_FIELDS) problems.push(`output_schema.required has more than ${MAX_REQUIRED_FIELDS} fields`);
  for (const [name, type] of entries) {
    if (!FIELD_NAME.test(name)) problems.push(`output_schema.required: "${name}" is not a usable field name`);
    if (!AI_FIELD_TYPES.includes(type as AiFieldType)) problems.push(`output_schema.required.${name} must be one of ${AI_FIELD_TYPES.join(', ')}`);
  }
}
