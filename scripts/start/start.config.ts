import { IsBoolean, IsInt, IsString, Matches, Max, Min } from '@touchpoint/config';
import { SERVICE_PORT, SERVICES, type ServiceName } from '@touchpoint/contracts';

/** Everything `npm start` runs: the seven services and the provider sandbox (DESIGN §7). */
export const STARTED_PROCESSES = [...SERVICES, 'sandbox'] as const;
export type StartedProcess = ServiceName | 'sandbox';

/** `outbox-dispatcher` → `OUTBOX_DISPATCHER_PORT`: the variable that moves one process's port. */
export function portVariable(name: StartedProcess): string {
  return `${name.toUpperCase().replace(/-/g, '_')}_PORT`;
}

/**
 * Environment of `npm start` (read once through `loadConfig`). The database and broker variables
 * are the services' own (libs/config) and are passed through to every child unchanged; each child
 * gets `PORT` from its `<SERVICE>_PORT` variable here, since one shared `PORT` cannot serve eight
 * processes.
 */
export class StartConfig {
  /** Same default as BaseConfig; the database in it is created when missing. */
  @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/touchpoint';

  @Matches(/^amqps?:\/\//, { message: 'must be an amqp:// URL' })
  AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

  /** Schema prefix of the services (libs/config); part of where the demo organization lives. */
  @Matches(/^[a-z0-9_]*$/, { message: 'must be lowercase letters, digits or _' })
  DB_SCHEMA_PREFIX = '';

  /** Where the sandbox fires provider webhooks; empty = this run's gateway. */
  @IsString()
  GATEWAY_URL = '';

  /** Interface every child listens on, and the host of the printed URLs. */
  @IsString()
  HOST = '127.0.0.1';

  @IsInt() @Min(1) @Max(65535) GATEWAY_PORT = SERVICE_PORT.gateway;
  @IsInt() @Min(1) @Max(65535) FOLLOWUPS_PORT = SERVICE_PORT.followups;
  @IsInt() @Min(1) @Max(65535) OUTREACH_PORT = SERVICE_PORT.outreach;
  @IsInt() @Min(1) @Max(65535) MESSAGING_PORT = SERVICE_PORT.messaging;
  @IsInt() @Min(1) @Max(65535) OUTBOX_DISPATCHER_PORT = SERVICE_PORT['outbox-dispatcher'];
  @IsInt() @Min(1) @Max(65535) ABUSE_PORT = SERVICE_PORT.abuse;
  @IsInt() @Min(1) @Max(65535) AI_GATEWAY_PORT = SERVICE_PORT['ai-gateway'];
  @IsInt() @Min(1) @Max(65535) SANDBOX_PORT = SERVICE_PORT.sandbox;

  /** How long every process may take to answer `/health/ready`, ms. */
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  START_TIMEOUT_MS = 120_000;

  /** How long a child may take to exit after SIGTERM before it gets SIGKILL, ms. */
  @IsInt()
  @Min(100)
  @Max(600_000)
  STOP_TIMEOUT_MS = 10_000;

  /** Git-ignored folder where `npm start` remembers the demo organization and its API key. */
  @IsString()
  TOUCHPOINT_STATE_DIR = '.touchpoint';

  /** Show every log line, NestJS's start-up chatter included. */
  @IsBoolean()
  START_VERBOSE = false;

  /** Set (any value) to print the logs without ANSI colors (https://no-color.org). */
  @IsString()
  NO_COLOR = '';

  /** `HOST:<port>` of a process, as a URL. */
  urlOf(name: StartedProcess): string {
    // A wildcard listen address is not something a browser or curl can connect to.
    const host = ['0.0.0.0', '::', ''].includes(this.HOST) ? '127.0.0.1' : this.HOST;
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.portOf(name)}`;
  }

  portOf(name: StartedProcess): number {
    return (this as unknown as Record<string, number>)[portVariable(name)];
  }
}
