import { FLOW_MAX_WAIT_MS, FLOW_MIN_WAIT_MS, type FlowEdgeCondition, type FlowNode, type FlowTemplateRef } from '@touchpoint/contracts';
import { codePointLength } from '@touchpoint/text';

/**
 * The typed configs of each node type (documented on `FlowNode` in @touchpoint/contracts) and the
 * parser that turns a node's free-form `config` into one of them, listing every problem found.
 * Publish validation and the release engine both read configs through `parseNodeConfig`, so the
 * engine only ever runs configs that passed the same checks.
 */

export type WaitConfig = { mode: 'fixed'; duration_ms: number } | { mode: 'reply'; timeout_ms: number };

export const CONDITION_OPS = ['eq', 'neq', 'contains', 'not_contains', 'exists', 'not_exists', 'in', 'gt', 'gte', 'lt', 'lte'] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];
export interface ConditionRule {
  /** `contact.tags`, `contact.name|phone|email`, `contact.fields.<key>`, `vars.<key>`, `last_send.status`. */
  field: string;
  op: ConditionOp;
  value?: string | number | boolean | (string | number)[];
}
export interface ConditionConfig {
  match: 'all' | 'any';
  rules: ConditionRule[];
}
export interface AiClassifyConfig {
  classes: { id: string; label: string; description?: string }[];
  fallback_class_id: string;
  min_confidence: number;
  instructions?: string;
}
export interface MatchReplyConfig {
  branches: { id: string; keywords: string[] }[];
}
export interface RepeatConfig {
  max_count: number;
}
export type MediaConfig = { media_type: 'image' | 'document' | 'audio' | 'video'; link: string; caption?: string; filename?: string };
/**
 * What every send action may carry. `anchor_grace_ms` ties the send to the enrollment's anchor (an
 * appointment's start, `anchor_at`): once the anchor is more than this many ms in the past, the
 * send is skipped (`anchor_past_grace`), and with no anchor at all it is skipped too
 * (`anchor_missing`) (seed 000 "reminder past grace → skip"). 0 means "only before the anchor".
 */
interface AnchoredSend {
  anchor_grace_ms?: number;
}
export type ActionConfig =
  | ({ mode: 'text'; body: string; preview_url?: boolean; template_fallback?: FlowTemplateRef } & AnchoredSend)
  | ({ mode: 'template'; template: FlowTemplateRef } & AnchoredSend)
  | ({ mode: 'media'; media: MediaConfig; template_fallback?: FlowTemplateRef } & AnchoredSend)
  | ({ mode: 'ai'; instructions: string; template_fallback?: FlowTemplateRef } & AnchoredSend)
  | { mode: 'tag' | 'untag'; tags: string[] }
  | { mode: 'handoff'; note?: string };
export interface EndConfig {
  outcome: string;
}

export type ParsedNode =
  | { type: 'trigger'; config: Record<string, never> }
  | { type: 'wait'; config: WaitConfig }
  | { type: 'condition'; config: ConditionConfig }
  | { type: 'ai_classify'; config: AiClassifyConfig }
  | { type: 'match_reply'; config: MatchReplyConfig }
  | { type: 'repeat'; config: RepeatConfig }
  | { type: 'action'; config: ActionConfig }
  | { type: 'end'; config: EndConfig };

/** Largest `repeat.max_count`. */
export const REPEAT_MAX_COUNT = 20;
/** Longest text body, characters (WhatsApp's text limit, seed 004). */
export const TEXT_MAX_LENGTH = 4096;
/** Longest caption, characters (WhatsApp's caption limit). */
export const CAPTION_MAX_LENGTH = 1024;
/** The branch `match_reply` takes when no keyword matched. */
export const DEFAULT_BRANCH = 'default';

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const SNAKE = /^[a-z][a-z0-9_]{0,39}$/;
const LANGUAGE = /^[a-z]{2,3}(_[A-Z]{2})?$/;

/** Problems of one node's config: `wait_out_of_range` is reported apart from other bad config. */
export interface ConfigProblem {
  code: 'invalid_config' | 'wait_out_of_range';
  message: string;
}

export type ParseResult = { ok: true; node: ParsedNode } | { ok: false; problems: ConfigProblem[] };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNonEmptyString = (v: unknown, max = 4096): v is string => typeof v === 'string' && v.trim().length > 0 && codePointLength(v) <= max;

/** Parses a template reference; pushes problems under `path`. */
function parseTemplate(value: unknown, path: string, problems: ConfigProblem[]): FlowTemplateRef | undefined {
  if (!isObject(value)) {
    problems.push({ code: 'invalid_config', message: `${path} must be an object {name, language, parameters?}` });
    return undefined;
  }
  const { name, language, parameters } = value;
  if (typeof name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(name)) problems.push({ code: 'invalid_config', message: `${path}.name must be a template name (lowercase letters, digits, _)` });
  if (typeof language !== 'string' || !LANGUAGE.test(language)) problems.push({ code: 'invalid_config', message: `${path}.language must be a locale code like pt_BR` });
  if (parameters !== undefined && (!Array.isArray(parameters) || parameters.length > 20 || !parameters.every((p) => isNonEmptyString(p, 1024)))) {
    problems.push({ code: 'invalid_config', message: `${path}.parameters must be up to 20 non-empty strings` });
  }
  return { name: name as string, language: language as string, ...(parameters !== undefined ? { parameters: parameters as string[] } : {}) };
}

function waitMs(value: unknown, field: string, problems: ConfigProblem[]): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    problems.push({ code: 'invalid_config', message: `${field} must be an integer number of milliseconds` });
    return 0;
  }
  if (value < FLOW_MIN_WAIT_MS || value > FLOW_MAX_WAIT_MS) {
    problems.push({ code: 'wait_out_of_range', message: `${field} must be between 5 minutes (${FLOW_MIN_WAIT_MS}) and 90 days (${FLOW_MAX_WAIT_MS}); got ${value}` });
  }
  return value;
}

function unknownKeys(config: Record<string, unknown>, allowed: string[], problems: ConfigProblem[]): void {
  for (const key of Object.keys(config)) if (!allowed.includes(key)) problems.push({ code: 'invalid_config', message: `unknown config field "${key}"` });
}

/**
 * Parses `node.config` for `node.type`.
 * @returns the typed node, or every problem found (`invalid_config`, `wait_out_of_range`)
 */
export function parseNodeConfig(node: Pick<FlowNode, 'type' | 'config'>): ParseResult {
  const problems: ConfigProblem[] = [];
  const config = node.config;
  if (!isObject(config)) return { ok: false, problems: [{ code: 'invalid_config', message: 'config must be an object' }] };
  let parsed: ParsedNode | undefined;
  switch (node.type) {
    case 'trigger':
      unknownKeys(config, [], problems);
      parsed = { type: 'trigger', config: {} };
      break;
    case 'wait': {
      if (config.mode === 'fixed') {
        unknownKeys(config, ['mode', 'duration_ms'], problems);
        parsed = { type: 'wait', config: { mode: 'fixed', duration_ms: waitMs(config.duration_ms, 'duration_ms', problems) } };
      } else if (config.mode === 'reply') {
        unknownKeys(config, ['mode', 'timeout_ms'], problems);
        parsed = { type: 'wait', config: { mode: 'reply', timeout_ms: waitMs(config.timeout_ms, 'timeout_ms', problems) } };
      } else {
        problems.push({ code: 'invalid_config', message: 'mode must be "fixed" or "reply"' });
      }
      break;
    }
    case 'condition': {
      unknownKeys(config, ['match', 'rules'], problems);
      const match = config.match ?? 'all';
      if (match !== 'all' && match !== 'any') problems.push({ code: 'invalid_config', message: 'match must be "all" or "any"' });
      const rules = config.rules;
      if (!Array.isArray(rules) || rules.length === 0 || rules.length > 20) {
        problems.push({ code: 'invalid_config', message: 'rules must be 1 to 20 rules {field, op, value?}' });
      } else {
        rules.forEach((rule, i) => {
          if (!isObject(rule)) return problems.push({ code: 'invalid_config', message: `rules[${i}] must be an object` });
          if (typeof rule.field !== 'string' || !/^(contact\.(tags|name|phone|email|fields\.[A-Za-z0-9_]{1,64})|vars\.[A-Za-z0-9_]{1,64}|last_send\.status)$/.test(rule.field)) {
            problems.push({ code: 'invalid_config', message: `rules[${i}].field must be contact.tags, contact.name|phone|email, contact.fields.<key>, vars.<key> or last_send.status` });
          }
          if (!CONDITION_OPS.includes(rule.op as ConditionOp)) problems.push({ code: 'invalid_config', message: `rules[${i}].op must be one of ${CONDITION_OPS.join(', ')}` });
          const needsValue = rule.op !== 'exists' && rule.op !== 'not_exists';
          if (needsValue && rule.value === undefined) problems.push({ code: 'invalid_config', message: `rules[${i}].value is required for ${String(rule.op)}` });
          if (rule.op === 'in' && !Array.isArray(rule.value)) problems.push({ code: 'invalid_config', message: `rules[${i}].value must be a list for "in"` });
          if (['gt', 'gte', 'lt', 'lte'].includes(rule.op as string) && typeof rule.value !== 'number') problems.push({ code: 'invalid_config', message: `rules[${i}].value must be a number for ${String(rule.op)}` });
        });
      }
      parsed = { type: 'condition', config: { match: match as 'all' | 'any', rules: (rules ?? []) as ConditionRule[] } };
      break;
    }
    case 'ai_classify': {
      unknownKeys(config, ['classes', 'fallback_class_id', 'min_confidence', 'instructions'], problems);
      const classes = config.classes;
      if (!Array.isArray(classes) || classes.length < 2 || classes.length > 10) {
        problems.push({ code: 'invalid_config', message: 'classes must be 2 to 10 classes {id, label, description?}' });
      } else {
        const ids = new Set<string>();
        classes.forEach((c, i) => {
          if (!isObject(c) || typeof c.id !== 'string' || !ID.test(c.id) || !isNonEmptyString(c.label, 200)) problems.push({ code: 'invalid_config', message: `classes[${i}] needs an id and a label` });
          else if (ids.has(c.id)) problems.push({ code: 'invalid_config', message: `classes[${i}].id "${c.id}" is repeated` });
          else ids.add(c.id);
        });
        if (typeof config.fallback_class_id !== 'string' || !ids.has(config.fallback_class_id)) problems.push({ code: 'invalid_config', message: 'fallback_class_id must be one of the class ids' });
      }
      const minConfidence = config.min_confidence ?? 0.6;
      if (typeof minConfidence !== 'number' || minConfidence < 0 || minConfidence > 1) problems.push({ code: 'invalid_config', message: 'min_confidence must be between 0 and 1' });
      if (config.instructions !== undefined && !isNonEmptyString(config.instructions, 4000)) problems.push({ code: 'invalid_config', message: 'instructions must be 1 to 4000 characters' });
      parsed = { type: 'ai_classify', config: { classes: (classes ?? []) as AiClassifyConfig['classes'], fallback_class_id: config.fallback_class_id as string, min_confidence: minConfidence as number, instructions: config.instructions as string | undefined } };
      break;
    }
    case 'match_reply': {
      unknownKeys(config, ['branches'], problems);
      const branches = config.branches;
      if (!Array.isArray(branches) || branches.length === 0 || branches.length > 20) {
        problems.push({ code: 'invalid_config', message: 'branches must be 1 to 20 branches {id, keywords}' });
      } else {
        const ids = new Set<string>();
        branches.forEach((b, i) => {
          if (!isObject(b) || typeof b.id !== 'string' || !ID.test(b.id)) return problems.push({ code: 'invalid_config', message: `branches[${i}].id must be 1-64 letters, digits, _ or -` });
          if (b.id === DEFAULT_BRANCH) problems.push({ code: 'invalid_config', message: `branches[${i}].id "${DEFAULT_BRANCH}" is reserved for the no-match exit` });
          if (ids.has(b.id)) problems.push({ code: 'invalid_config', message: `branches[${i}].id "${b.id}" is repeated` });
          ids.add(b.id);
          if (!Array.isArray(b.keywords) || b.keywords.length === 0 || b.keywords.length > 50 || !b.keywords.every((k) => isNonEmptyString(k, 100))) {
            problems.push({ code: 'invalid_config', message: `branches[${i}].keywords must be 1 to 50 non-empty words or phrases` });
          }
        });
      }
      parsed = { type: 'match_reply', config: { branches: (branches ?? []) as MatchReplyConfig['branches'] } };
      break;
    }
    case 'repeat': {
      unknownKeys(config, ['max_count'], problems);
      const max = config.max_count;
      if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > REPEAT_MAX_COUNT) problems.push({ code: 'invalid_config', message: `max_count must be an integer from 1 to ${REPEAT_MAX_COUNT}` });
      parsed = { type: 'repeat', config: { max_count: max as number } };
      break;
    }
    case 'action':
      parsed = { type: 'action', config: parseAction(config, problems) as ActionConfig };
      break;
    case 'end': {
      unknownKeys(config, ['outcome'], problems);
      const outcome = config.outcome ?? 'completed';
      if (typeof outcome !== 'string' || !SNAKE.test(outcome)) problems.push({ code: 'invalid_config', message: 'outcome must be a snake_case word (up to 40 characters)' });
      parsed = { type: 'end', config: { outcome: outcome as string } };
      break;
    }
    default:
      return { ok: false, problems: [{ code: 'invalid_config', message: `unknown node type "${String(node.type)}"` }] };
  }
  return problems.length ? { ok: false, problems } : { ok: true, node: parsed as ParsedNode };
}

/** `anchor_grace_ms` of a send action: absent, or whole ms from 0 to 90 days. */
function anchorGrace(config: Record<string, unknown>, problems: ConfigProblem[]): AnchoredSend {
  const grace = config.anchor_grace_ms;
  if (grace === undefined) return {};
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > FLOW_MAX_WAIT_MS) {
    problems.push({ code: 'invalid_config', message: `anchor_grace_ms must be an integer number of milliseconds from 0 to ${FLOW_MAX_WAIT_MS} (90 days)` });
  }
  return { anchor_grace_ms: grace as number };
}

function parseAction(config: Record<string, unknown>, problems: ConfigProblem[]): ActionConfig | undefined {
  const fallback = (): FlowTemplateRef | undefined => (config.template_fallback === undefined ? undefined : parseTemplate(config.template_fallback, 'template_fallback', problems));
  switch (config.mode) {
    case 'text':
      unknownKeys(config, ['mode', 'body', 'preview_url', 'template_fallback', 'anchor_grace_ms'], problems);
      if (!isNonEmptyString(config.body, TEXT_MAX_LENGTH)) problems.push({ code: 'invalid_config', message: `body must be 1 to ${TEXT_MAX_LENGTH} characters` });
      if (config.preview_url !== undefined && typeof config.preview_url !== 'boolean') problems.push({ code: 'invalid_config', message: 'preview_url must be a boolean' });
      return { mode: 'text', body: config.body as string, preview_url: config.preview_url as boolean | undefined, template_fallback: fallback(), ...anchorGrace(config, problems) };
    case 'template':
      unknownKeys(config, ['mode', 'template', 'anchor_grace_ms'], problems);
      return { mode: 'template', template: parseTemplate(config.template, 'template', problems) as FlowTemplateRef, ...anchorGrace(config, problems) };
    case 'media': {
      unknownKeys(config, ['mode', 'media', 'template_fallback', 'anchor_grace_ms'], problems);
      const media = config.media;
      if (!isObject(media)) {
        problems.push({ code: 'invalid_config', message: 'media must be an object {media_type, link, caption?, filename?}' });
      } else {
        if (!['image', 'document', 'audio', 'video'].includes(media.media_type as string)) problems.push({ code: 'invalid_config', message: 'media.media_type must be image, document, audio or video' });
        if (typeof media.link !== 'string' || !/^https:\/\/\S+$/.test(media.link)) problems.push({ code: 'invalid_config', message: 'media.link must be an https URL' });
        if (media.caption !== undefined && (!isNonEmptyString(media.caption, CAPTION_MAX_LENGTH) || media.media_type === 'audio')) problems.push({ code: 'invalid_config', message: `media.caption must be 1 to ${CAPTION_MAX_LENGTH} characters, and audio takes none` });
        if (media.filename !== undefined && (!isNonEmptyString(media.filename, 240) || media.media_type !== 'document')) problems.push({ code: 'invalid_config', message: 'media.filename is for documents only' });
      }
      return { mode: 'media', media: media as MediaConfig, template_fallback: fallback(), ...anchorGrace(config, problems) };
    }
    case 'ai':
      unknownKeys(config, ['mode', 'instructions', 'template_fallback', 'anchor_grace_ms'], problems);
      if (!isNonEmptyString(config.instructions, 4000)) problems.push({ code: 'invalid_config', message: 'instructions must be 1 to 4000 characters' });
      return { mode: 'ai', instructions: config.instructions as string, template_fallback: fallback(), ...anchorGrace(config, problems) };
    case 'tag':
    case 'untag':
      unknownKeys(config, ['mode', 'tags'], problems);
      if (!Array.isArray(config.tags) || config.tags.length === 0 || config.tags.length > 20 || !config.tags.every((t) => isNonEmptyString(t, 64))) {
        problems.push({ code: 'invalid_config', message: 'tags must be 1 to 20 tags of up to 64 characters' });
      }
      return { mode: config.mode, tags: config.tags as string[] };
    case 'handoff':
      unknownKeys(config, ['mode', 'note'], problems);
      if (config.note !== undefined && !isNonEmptyString(config.note, 1000)) problems.push({ code: 'invalid_config', message: 'note must be 1 to 1000 characters' });
      return { mode: 'handoff', note: config.note as string | undefined };
    default:
      problems.push({ code: 'invalid_config', message: 'mode must be text, template, media, ai, tag, untag or handoff' });
      return undefined;
  }
}

/** An exit of a node, as a key: `always`, `branch:<id>`, `class:<id>`, `cond:true|false`. */
export type ExitKey = string;

/** The key of the exit an edge condition covers. */
export function exitKeyOf(condition: FlowEdgeCondition): ExitKey {
  switch (condition.type) {
    case 'always':
      return 'always';
    case 'branch':
      return `branch:${condition.branch_id}`;
    case 'class_match':
      return `class:${condition.class_id}`;
    case 'cond_result':
      return `cond:${condition.value}`;
  }
}

/** The branch id seed 002 reports for an exit (`null` for `always`). */
export function branchIdOf(exit: ExitKey): string | null {
  return exit === 'always' ? null : exit.slice(exit.indexOf(':') + 1);
}

/** Every exit a parsed node has; each must be covered by exactly one edge. */
export function exitsOf(node: ParsedNode): ExitKey[] {
  switch (node.type) {
    case 'trigger':
    case 'action':
      return ['always'];
    case 'wait':
      return node.config.mode === 'fixed' ? ['always'] : ['branch:replied', 'branch:timeout'];
    case 'condition':
      return ['cond:true', 'cond:false'];
    case 'ai_classify':
      return node.config.classes.map((c) => `class:${c.id}`);
    case 'match_reply':
      return [...node.config.branches.map((b) => `branch:${b.id}`), `branch:${DEFAULT_BRANCH}`];
    case 'repeat':
      return ['branch:again', 'branch:done'];
    case 'end':
      return [];
  }
}

/** Whether an action sends a message (as opposed to tagging or handing off). */
export function isSendAction(config: ActionConfig): config is Extract<ActionConfig, { mode: 'text' | 'template' | 'media' | 'ai' }> {
  return config.mode === 'text' || config.mode === 'template' || config.mode === 'media' || config.mode === 'ai';
}

/** Whether a node needs the model (executed by the follow-up AI work). */
export function usesAi(node: ParsedNode): boolean {
  return node.type === 'ai_classify' || (node.type === 'action' && node.config.mode === 'ai');
}
