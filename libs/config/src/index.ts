import 'reflect-metadata';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, type ValidationError, validateSync } from 'class-validator';

/** class-validator's type checks, and the size or range checks that only repeat a failed type check (`limit=abc`). */
const TYPE_CONSTRAINTS = new Set(['isInt', 'isNumber', 'isNumberString', 'isString', 'isBoolean', 'isUuid', 'isArray', 'isObject', 'isDate', 'isDateString', 'isIso8601', 'isEnum']);
const RANGE_CONSTRAINTS = new Set(['min', 'max', 'minLength', 'maxLength', 'isLength', 'arrayMinSize', 'arrayMaxSize', 'arrayNotEmpty', 'isPositive', 'isNegative']);

/**
 * The problems of one class-validator error: all of them, except that a value of the wrong type
 * lists that alone, not also the ranges it cannot be checked against. Used for config and for the
 * gateway's request validation.
 */
export function problemsOf(error: ValidationError): string[] {
  const constraints = Object.entries(error.constraints ?? {});
  const typeFailed = constraints.some(([name]) => TYPE_CONSTRAINTS.has(name));
  return constraints.filter(([name]) => !typeFailed || !RANGE_CONSTRAINTS.has(name)).map(([, problem]) => problem);
}

/** Thrown at start-up when an environment variable is missing or invalid; names every bad variable. */
export class ConfigError extends Error {
  constructor(
    readonly variables: string[],
    detail: string,
  ) {
    super(`invalid configuration: ${detail}`);
    this.name = 'ConfigError';
  }
}

const SECRETS = Symbol('touchpoint:config-secrets');

/**
 * When a secret is not in use, so its default may stay (e.g. the model key with no model configured).
 * Called with the loaded instance of the class that declares the secret (`never`: any config class).
 */
export type SecretUnused = (config: never) => boolean;

/**
 * Marks a variable as a secret (a signing key, a token, an encryption key). Its built-in default
 * is public (it is in this repository), so a process with `NODE_ENV=production` that still has the
 * default refuses to start (see loadConfig), unless `unused(config)` says the secret is not used.
 */
export function Secret(unused?: SecretUnused): PropertyDecorator {
  return (target, property) => {
    const inherited = (target as Record<symbol, Map<string, SecretUnused | undefined> | undefined>)[SECRETS];
    const own = Object.prototype.hasOwnProperty.call(target, SECRETS) && inherited ? inherited : new Map(inherited ?? []);
    own.set(String(property), unused);
    Object.defineProperty(target, SECRETS, { value: own, enumerable: false, configurable: true });
  };
}

/** The names of the variables marked `@Secret()` on a config class (inherited ones included). */
export function secretsOf(target: object): string[] {
  return [...secretMap(target).keys()];
}

function secretMap(target: object): Map<string, SecretUnused | undefined> {
  const proto = typeof target === 'function' ? (target as { prototype: object }).prototype : target;
  return (proto as Record<symbol, Map<string, SecretUnused | undefined> | undefined>)[SECRETS] ?? new Map();
}

/** The spellings of a boolean variable (compared case-insensitively, surrounding spaces ignored). */
export const BOOLEAN_SPELLINGS = { true: ['true', '1', 'yes'], false: ['false', '0', 'no'] } as const;

const BOOLEAN_PROBLEM = 'must be one of true, false, 1, 0, yes, no';

/**
 * A boolean variable's value: `true`/`1`/`yes` → true, `false`/`0`/`no` → false (any case), and
 * anything else (`flase`, `on`, `2`) → undefined, which loadConfig reports as a ConfigError.
 */
export function parseBoolean(value: string): boolean | undefined {
  const word = value.trim().toLowerCase();
  if ((BOOLEAN_SPELLINGS.true as readonly string[]).includes(word)) return true;
  if ((BOOLEAN_SPELLINGS.false as readonly string[]).includes(word)) return false;
  return undefined;
}

/**
 * Builds and validates a config class from environment variables (the class's property names are
 * the variable names). Defaults come from property initialisers; a variable whose default is a
 * boolean takes only the spellings of parseBoolean. Only this function reads
 * `process.env` (STYLE: config is one validated class per app). With `NODE_ENV=production`, every
 * `@Secret()` variable must be set to something other than its built-in default.
 * @throws ConfigError naming each missing or invalid variable, or each secret left at its default in production
 */
export function loadConfig<T extends object>(cls: new () => T, env: NodeJS.ProcessEnv = process.env): T {
  const defaults = new cls() as Record<string, unknown>;
  const raw: Record<string, unknown> = { ...defaults };
  const notBooleans = new Set<string>();
  const order = (name: string) => Object.keys(defaults).indexOf(name);
  for (const key of Object.keys(defaults)) {
    const value = env[key];
    if (value === undefined || value === '') continue;
    // Coerce by the default's type: decorator metadata is not reliable for initialised fields.
    const kind = typeof defaults[key];
    if (kind === 'boolean') {
      const parsed = parseBoolean(value);
      if (parsed === undefined) notBooleans.add(key);
      raw[key] = parsed ?? value;
    } else {
      raw[key] = kind === 'number' && /^-?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
    }
  }
  const instance = Object.assign(new cls(), raw);
  const errors = validateSync(instance, { whitelist: false, forbidUnknownValues: false });
  const problems = new Map<string, string[]>([...notBooleans].map((name) => [name, [BOOLEAN_PROBLEM]]));
  // A boolean's own type check would repeat BOOLEAN_PROBLEM; its other checks are kept.
  for (const e of errors) problems.set(e.property, problems.has(e.property) ? problems.get(e.property)! : problemsOf(e));
  if (problems.size > 0) {
    const names = [...problems.keys()].sort((a, b) => order(a) - order(b));
    const detail = names.map((name) => `${name}=${JSON.stringify(raw[name])}: ${problems.get(name)!.join('; ')}`).join(', ');
    throw new ConfigError(names, detail);
  }
  if ((instance as { NODE_ENV?: unknown }).NODE_ENV === 'production') {
    const defaulted = [...secretMap(cls)].filter(([name, unused]) => (instance as Record<string, unknown>)[name] === defaults[name] && !unused?.(instance as never)).map(([name]) => name);
    if (defaulted.length > 0) {
      throw new ConfigError(defaulted, `${defaulted.join(', ')}: still the built-in default, which is public; set a secret value of your own (NODE_ENV=production)`);
    }
  }
  return instance;
}

/** Settings every Touchpoint process shares: where the database and broker are, and logging. */
export class BaseConfig {
  /** PostgreSQL connection URL. */
  @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/touchpoint';

  /** RabbitMQ connection URL (vhost included). */
  @Matches(/^amqps?:\/\//, { message: 'must be an amqp:// URL' })
  AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

  /** Prefix of every exchange and queue name; tests use a unique one per file for isolation. */
  @Matches(/^[a-z0-9_-]+$/, { message: 'must be lowercase letters, digits, - or _' })
  BUS_NAMESPACE = 'tp';

  /** Prefix added to each service's schema name; tests use a unique one per file. */
  @Matches(/^[a-z0-9_]*$/, { message: 'must be lowercase letters, digits or _' })
  DB_SCHEMA_PREFIX = '';

  /** Connections in the service's PostgreSQL pool. */
  @IsInt()
  @Min(1)
  @Max(200)
  DB_POOL_SIZE = 10;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** Deadline of an RPC call across the bus, ms. */
  @IsInt()
  @Min(100)
  @Max(120_000)
  RPC_TIMEOUT_MS = 5000;

  /** Attempts of a failing bus handler before its message is dead-lettered (DESIGN §2); a database outage's retries are not counted. */
  @IsInt()
  @Min(1)
  @Max(20)
  BUS_MAX_ATTEMPTS = 5;

  /** First retry delay of a failing bus handler, ms; doubles on each attempt. */
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  BUS_RETRY_BASE_MS = 1000;

  /** Queue type of work and dead-letter queues: quorum in production, classic for fast tests. */
  @IsIn(['quorum', 'classic'])
  BUS_QUEUE_TYPE: 'quorum' | 'classic' = 'quorum';

  /** Messages in flight per consumer channel. */
  @IsInt()
  @Min(1)
  @Max(5000)
  BUS_PREFETCH = 100;

  /**
   * Most messages one consumer transaction takes when they queue up (1 turns batching off). A
   * message that finds a free transaction slot runs alone; under load, waiting messages share one
   * commit. A failing batch is rolled back and each message runs again on its own (DESIGN §2).
   */
  @IsInt()
  @Min(1)
  @Max(500)
  BUS_CONSUMER_BATCH = 16;

  /**
   * Most events of one type the outbox relay sends as one broker message (a pack; 1 sends each
   * event alone). The consumers run a pack's events as if each had come alone: inbox dedupe,
   * retries and dead letters stay per event. Every service of a deployment must run a release that
   * reads packs before one of them sends any.
   */
  @IsInt()
  @Min(1)
  @Max(500)
  BUS_PACK_SIZE = 32;

  /**
   * Most RPC requests of one caller, to one service and with one deadline, sent as one broker
   * message (a pack) while the caller's last send to it waits for the broker's confirm; 1 sends
   * each request alone. The service runs and answers each request of a pack as if it had come
   * alone. Every service of a deployment must run a release that reads RPC packs before one of
   * them sends any.
   */
  @IsInt()
  @Min(1)
  @Max(500)
  RPC_PACK_SIZE = 16;

  /**
   * Longest lock wait of a consumer batch's transaction, ms; 0 leaves PostgreSQL's (none). Two
   * batches can lock the same rows in opposite orders; PostgreSQL finds that deadlock only after its
   * `deadlock_timeout` (1 s by default), with both batches' connections held. A batch waiting longer
   * than this is rolled back sooner and its messages run one by one (which wait without a bound).
   */
  @IsInt()
  @Min(0)
  @Max(60_000)
  BUS_BATCH_LOCK_TIMEOUT_MS = 200;

  /** Relay backlog age (ms) above which /health/ready fails. */
  @IsInt()
  @Min(1000)
  RELAY_MAX_LAG_MS = 60_000;

  /** `production` refuses to start while a secret variable still has its built-in default; anything else is informational. */
  @IsOptional()
  @IsString()
  NODE_ENV?: string = 'development';
}

/** Config of a service that listens on HTTP (health, metrics, and the gateway's API). */
export class ServiceConfig extends BaseConfig {
  @IsString()
  HOST = '127.0.0.1';

  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 0;
}

export { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
