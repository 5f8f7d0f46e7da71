/**
 * Renders the services' pino JSON lines for a person watching `npm start`: one compact line per
 * record (`HH:MM:SS.mmm LEVEL [service] message key=value ...`), a colored service tag, and the
 * raw text for anything that is not a pino record.
 */

import { truncateText } from '@touchpoint/text';

/** pino's numeric levels (https://getpino.io/#/docs/api?id=levels). */
const LEVEL_NAMES: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Fields every record carries that the line shows elsewhere or that carry no news. */
const HIDDEN_FIELDS = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'context', 'v']);

/** Fields shown first, in this order, because they are what one searches a log for. */
const KEY_FIELDS = ['event', 'organization_id', 'reqId', 'request_id', 'err'];

/** NestJS's start-up chatter (module wiring, route mapping): hidden unless verbose. */
const NEST_BOOT_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication', 'NestMicroservice']);

/** At most this many fields per line; the rest is summarised as `+N`. */
const MAX_FIELDS = 6;
/** Longest rendering of one field value, characters. */
const MAX_VALUE_CHARS = 120;
/** Stack lines printed under an error or fatal record. */
const MAX_STACK_LINES = 8;

const ANSI = {
  reset: '\x1b[0m',
  dim: '\x1b[2m',
  bold: '\x1b[1m',
  red: '\x1b[31m',
  yellow: '\x1b[33m',
  redBg: '\x1b[41m\x1b[37m',
};
/** Tag colors, one per process in start order. */
const TAG_COLORS = ['\x1b[36m', '\x1b[32m', '\x1b[35m', '\x1b[34m', '\x1b[33m', '\x1b[96m', '\x1b[92m', '\x1b[95m', '\x1b[94m'];

export interface LogFormatOptions {
  /** Emit ANSI colors. */
  color: boolean;
  /** Width the service tag is padded to (the longest name). */
  tagWidth: number;
  /** Show NestJS start-up lines too. */
  verbose: boolean;
}

/** Color of the n-th process's tag. */
export function tagColor(index: number): string {
  return TAG_COLORS[index % TAG_COLORS.length];
}

/**
 * One rendered line (possibly followed by stack lines), or `undefined` when the record is
 * start-up chatter that is hidden without `verbose`.
 * @param tag the process name shown in brackets
 * @param colorCode the tag's ANSI color (from `tagColor`)
 * @param line one line of the child's stdout or stderr, without its newline
 */
export function renderLogLine(tag: string, colorCode: string, line: string, options: LogFormatOptions): string | undefined {
  const paint = (code: string, text: string) => (options.color ? `${code}${text}${ANSI.reset}` : text);
  const prefix = paint(colorCode, `[${tag.padEnd(options.tagWidth)}]`);
  const record = parseRecord(line);
  if (!record) return `${prefix} ${line}`;

  const level = levelName(record.level);
  const context = typeof record.context === 'string' ? record.context : undefined;
  if (!options.verbose && context && NEST_BOOT_CONTEXTS.has(context) && (level === 'info' || level === 'debug' || level === 'trace')) return undefined;

  const time = paint(ANSI.dim, clockTime(record.time));
  const levelText = paint(levelColor(level), level.toUpperCase().padEnd(5));
  const message = `${context ? `${context}: ` : ''}${typeof record.msg === 'string' ? record.msg : ''}`;
  const fields = renderFields(record);
  const head = `${time} ${levelText} ${prefix} ${message}${fields ? `  ${paint(ANSI.dim, fields)}` : ''}`;

  const stack = level === 'error' || level === 'fatal' ? stackOf(record) : [];
  return [head, ...stack.map((s) => `${' '.repeat(options.tagWidth + 22)}${paint(ANSI.dim, s)}`)].join('\n');
}

function parseRecord(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value && typeof value === 'object' && !Array.isArray(value) && ('msg' in value || 'level' in value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function levelName(level: unknown): string {
  if (typeof level === 'string') return level;
  if (typeof level === 'number') return LEVEL_NAMES[level] ?? String(level);
  return 'info';
}

function levelColor(level: string): string {
  if (level === 'warn') return ANSI.yellow;
  if (level === 'error') return ANSI.red;
  if (level === 'fatal') return ANSI.redBg;
  if (level === 'debug' || level === 'trace') return ANSI.dim;
  return ANSI.bold;
}

/** `HH:MM:SS.mmm` in local time from pino's ISO or epoch-ms time; the raw value if unparsable. */
function clockTime(time: unknown): string {
  const date = typeof time === 'string' || typeof time === 'number' ? new Date(time) : new Date();
  if (Number.isNaN(date.getTime())) return String(time);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

function renderFields(record: Record<string, unknown>): string {
  const names = Object.keys(record).filter((k) => !HIDDEN_FIELDS.has(k) && record[k] !== undefined && record[k] !== null);
  const ordered = [...KEY_FIELDS.filter((k) => names.includes(k)), ...names.filter((k) => !KEY_FIELDS.includes(k))];
  const shown = ordered.slice(0, MAX_FIELDS).map((k) => `${k}=${renderValue(k, record[k])}`);
  if (ordered.length > MAX_FIELDS) shown.push(`+${ordered.length - MAX_FIELDS}`);
  return shown.join(' ');
}

function renderValue(key: string, value: unknown): string {
  let text: string;
  if (key === 'err' && value && typeof value === 'object') {
    const err = value as { type?: string; message?: string; code?: string };
    text = `${err.type ?? 'Error'}${err.code ? `(${err.code})` : ''}: ${err.message ?? ''}`;
  } else if (typeof value === 'string') {
    text = /[\s"]/.test(value) || value === '' ? JSON.stringify(value) : value;
  } else {
    text = JSON.stringify(value) ?? String(value);
  }
  return truncateText(text, MAX_VALUE_CHARS, { ellipsis: '…' });
}

/** The stack lines after the first (which repeats the message), from `err.stack` or Nest's `trace`. */
function stackOf(record: Record<string, unknown>): string[] {
  const err = record.err as { stack?: unknown } | undefined;
  const stack = typeof err?.stack === 'string' ? err.stack : typeof record.trace === 'string' ? record.trace : undefined;
  if (!stack) return [];
  return stack
    .split('\n')
    .slice(1)
    .map((s) => s.trim())
    .filter(Boolean)
    .slice(0, MAX_STACK_LINES);
}
