import { Inject, Injectable } from '@nestjs/common';
import { AppError, ErrorCode, type ErrorEnvelope } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { describeStartError } from '@touchpoint/runtime';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';
import { CLI_LOGGER } from './cli-logger.js';

/** Postgres SQLSTATE of a missing table: the schema has not been migrated yet. */
const PG_UNDEFINED_TABLE = '42P01';

/**
 * What a command prints (CLI contract): with `--json`, exactly one JSON object on stdout, on one
 * line, `{"error": {"code", "message"}}` on failure; without it, a line for a person. Logs go to
 * stderr. A failure sets exit code 1.
 */
@Injectable()
export class CliOutput {
  constructor(
    @Inject(CLI_LOGGER) private readonly logger: Logger,
    @Inject(CLI_CONFIG) private readonly config: CliConfig,
  ) {}

  /** Prints a command's result. */
  success(result: object, json: boolean | undefined, human: string): void {
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${human}\n`);
  }

  /** Prints a failure and sets the exit code. */
  failure(err: unknown, json: boolean | undefined): void {
    const unreachable = unreachableEnvelope(err, this.config);
    const envelope = unreachable ?? envelopeOf(err);
    if (!unreachable && !(err instanceof AppError)) this.logger.error({ event: 'cli.command_failed', err: err instanceof Error ? { message: err.message, stack: err.stack } : err }, 'command failed');
    if (json) process.stdout.write(`${JSON.stringify(envelope)}\n`);
    else process.stderr.write(`error (${envelope.error.code}): ${envelope.error.message}\n`);
    process.exitCode = 1;
  }
}

/** The envelope of any error; unknown errors keep their message (an operator reads it). */
export function envelopeOf(err: unknown): ErrorEnvelope {
  if (err instanceof AppError) return err.toEnvelope();
  const code = (err as { code?: unknown })?.code;
  if (code === PG_UNDEFINED_TABLE) {
    return { error: { code: ErrorCode.Internal, message: `${(err as Error).message} (run \`npm run cli -- migrate\` first)` } };
  }
  return { error: { code: ErrorCode.Internal, message: describeStartError(err) } };
}

/**
 * A refused connection, told as which dependency is down and which variable points at it, or
 * undefined when the error is something else.
 */
export function unreachableEnvelope(err: unknown, config: CliConfig): ErrorEnvelope | undefined {
  const e = err as { code?: unknown; address?: string; port?: number };
  if (e?.code !== 'ECONNREFUSED') return undefined;
  const portOf = (url: string, fallback: number) => Number(new URL(url).port || fallback);
  const at = `${e.address}:${e.port}`;
  if (e.port === portOf(config.DATABASE_URL, 5432)) {
    return { error: { code: ErrorCode.ServiceUnavailable, message: `PostgreSQL is not reachable at ${at} (start it, or set DATABASE_URL)` } };
  }
  if (e.port === portOf(config.AMQP_URL, 5672)) {
    return { error: { code: ErrorCode.ServiceUnavailable, message: `RabbitMQ is not reachable at ${at} (start it, or set AMQP_URL)` } };
  }
  return undefined;
}
