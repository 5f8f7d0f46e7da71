import { pino } from 'pino';
import type { Logger } from '@touchpoint/observability';

/** Injection token of the CLI's logger. */
export const CLI_LOGGER = Symbol('touchpoint:cli-logger');

/** JSON log lines on stderr: stdout belongs to the command's result (CLI contract). */
export function createCliLogger(level: string): Logger {
  return pino({ level, base: { service: 'cli' }, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } }, pino.destination({ dest: 2, sync: true }));
}
