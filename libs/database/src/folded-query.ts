import pg from 'pg';
import pgUtils from 'pg/lib/utils.js';

/** pg's own mapping of a parameter to its text form (dates, arrays, buffers, JSON), as its `Query` binds them. */
const { prepareValue } = pgUtils as { prepareValue: (value: unknown) => unknown };

/** One SQL statement and its parameters (`$1`…), as a step of a folded round trip. */
export interface Statement {
  sql: string;
  params?: unknown[];
}

/**
 * The comment that ends a statement asked to run on its cached generic plan (`genericPlan`): at the
 * end, so the statement still reads, logs and matches by its first words. Connections otherwise
 * plan every execution for its own values (`plan_cache_mode = force_custom_plan`, see
 * `createServiceDataSource`).
 */
export const GENERIC_PLAN = '\n/* plan: generic */';

/**
 * Marks a parameterized statement to run on a generic plan: planned once per connection, then only
 * executed. Planning was about a fifth of the server's work in `bench:pipeline` (pg_stat_statements,
 * `track_planning`), most of it spent again on every call of the same batch statements (an
 * `unnest($1::uuid[])` joined to a table by its key: the values never change the plan).
 *
 * The plan is built with sequential scans, hash joins and merge joins priced out
 * (`enable_seqscan`, `enable_hashjoin`, `enable_mergejoin` off): on a young table (a fresh install,
 * a database without autovacuum) the planner prices reading the whole table (a scan, or a whole
 * index under a hash join with the batch) below one index probe per batch row, and would keep that
 * plan after the table grew (test/database/generic-plan: 20,000 rows read per lookup of two).
 * What is left is a nested loop from the batch's rows into each table's index. So only for
 * statements that reach every table row by an index from values they are given (a batch of ids or
 * keys). Not for a statement whose best plan depends on the values (a filter by a status, a range
 * of due times, a lock taken in another order than the index's): those stay planned per call.
 * `bench:pipeline` compared each statement marked here under both plans.
 */
export function genericPlan(sql: string): string {
  return sql + GENERIC_PLAN;
}

/** Whether a statement asked for a generic plan (it also needs parameters: a statement without them is not prepared). */
export function wantsGenericPlan(step: Statement): boolean {
  return step.sql.endsWith(GENERIC_PLAN) && step.params !== undefined && step.params.length > 0;
}

/** The plan mode every service connection starts with (`createServiceDataSource`): each run planned for its own values. */
export const CONNECTION_PLAN_CACHE_MODE = 'force_custom_plan';
/** Back to the connection's own plan settings, after a run of marked steps. */
const CUSTOM_PLAN_SETTINGS = `SELECT set_config('plan_cache_mode', '${CONNECTION_PLAN_CACHE_MODE}', true), set_config('enable_seqscan', 'on', true), set_config('enable_hashjoin', 'on', true), set_config('enable_mergejoin', 'on', true)`;
/** The settings a marked statement's plan is built and run under (also read by test helpers that explain it). */
export const GENERIC_PLAN_SETTINGS = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`;
/** Prepared by these names on each connection that runs a marked statement. */
const SETTINGS_NAMES = new Map([
  [GENERIC_PLAN_SETTINGS, 'tp_plan_generic'],
  [CUSTOM_PLAN_SETTINGS, 'tp_plan_custom'],
]);

/** The part of pg's connection a folded query writes to and reads from (pg 8, not typed by @types/pg). */
interface WireConnection {
  parsedStatements: Record<string, string>;
  parse(message: { text: string; name?: string; types?: unknown[] }): void;
  bind(message: { statement?: string; portal?: string; values?: unknown[]; binary?: boolean; valueMapper?: unknown }): void;
  describe(message: { type: 'P' | 'S'; name?: string }): void;
  execute(message: { portal?: string; rows?: number }): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
  removeListener(event: 'parseComplete', listener: () => void): void;
}

/** The members of pg's `Query` a folded query overrides or reads (pg 8, not typed by @types/pg). */
interface QueryInternals {
  _results: pg.QueryResult | pg.QueryResult[];
  callback?: (err: Error | null, result?: unknown) => void;
  handleReadyForQuery(connection: WireConnection): void;
  handleError(err: Error, connection: WireConnection): void;
}

const QueryBase = pg.Query as unknown as new (config: { text: string; callback: (err: Error | null, result?: unknown) => void }) => QueryInternals;

/**
 * Several statements in one round trip: each step's Parse (unless the connection has its named
 * statement already), Bind and Execute, then one Sync; the server answers once, after the last. A
 * failing step makes the server skip every later step up to the Sync (a folded COMMIT after it
 * does not run, and the transaction stays open and failed for the caller's ROLLBACK); the query
 * then fails with that step's error. Answers each step's result, in order.
 *
 * Parameterized steps are prepared by name (`name(sql)`, as `PreparingClient` does), and the
 * connection learns that a name is prepared only from the ParseComplete answering its Parse
 * (counted in order), so a step that failed to parse is parsed again next time.
 *
 * A run of steps marked by `genericPlan` goes between two settings steps: generic plans on before
 * it, the connection's custom plans back after it. Both are local to the transaction (the implicit
 * one up to the Sync, when no BEGIN is open), so a step that fails in between leaves nothing
 * changed. Their results are not answered; `settingsSteps` counts them.
 */
export class FoldedQuery extends QueryBase {
  /** The name each Parse this query sent was for ('' unnamed), in order; then how many completed. */
  private readonly parses: Array<{ name: string; text: string }> = [];
  private parsed = 0;
  private connection?: WireConnection;
  private readonly onParseComplete = () => void this.parsed++;
  /** What goes on the wire: the steps, with the plan settings around each run of marked ones. */
  private readonly wire: Statement[] = [];
  /** Positions in `wire` (and so in the results) of the settings steps. */
  private readonly settings = new Set<number>();

  constructor(
    /** The statements, in the order they run (read by tools that count statements). */
    readonly steps: Statement[],
    private readonly nameOf: (sql: string) => string | undefined,
    callback: (err: Error | null, results?: pg.QueryResult[]) => void,
  ) {
    super({ text: steps.map((s) => s.sql).join(';\n'), callback: callback as (err: Error | null, result?: unknown) => void });
    // Only a statement prepared by name keeps a plan: past the cap of names a marked one runs unnamed, planned per call as any other.
    const generic = steps.map((step) => wantsGenericPlan(step) && nameOf(step.sql) !== undefined);
    steps.forEach((step, i) => {
      if (generic[i] && !generic[i - 1]) this.addSettings(GENERIC_PLAN_SETTINGS);
      this.wire.push(step);
      if (generic[i] && !generic[i + 1]) this.addSettings(CUSTOM_PLAN_SETTINGS);
    });
  }

  /** Statements sent besides the steps (the plan settings), read by tools that count statements. */
  get settingsSteps(): number {
    return this.settings.size;
  }

  private addSettings(sql: string): void {
    this.settings.add(this.wire.length);
    this.wire.push({ sql });
  }

  requiresPreparation(): boolean {
    return true;
  }

  /** Writes every step and the Sync (pg corks the socket around this: one write). */
  prepare(connection: WireConnection): void {
    this.connection = connection;
    connection.on('parseComplete', this.onParseComplete);
    // A name parsed earlier in this round trip is not parsed again (the server would refuse it: it exists by then).
    const parsedHere = new Set<string>();
    for (const step of this.wire) {
      const name = SETTINGS_NAMES.get(step.sql) ?? (step.params && step.params.length > 0 ? (this.nameOf(step.sql) ?? '') : '');
      if (!name || (connection.parsedStatements[name] !== step.sql && !parsedHere.has(name))) {
        connection.parse({ text: step.sql, name, types: [] });
        this.parses.push({ name, text: step.sql });
        if (name) parsedHere.add(name);
      }
      connection.bind({ statement: name, portal: '', values: step.params ?? [], binary: false, valueMapper: prepareValue });
      connection.describe({ type: 'P', name: '' });
      connection.execute({ portal: '', rows: 0 });
    }
    connection.sync();
  }

  handleReadyForQuery(connection: WireConnection): void {
    this.learnParsed();
    // One result per step: pg starts a new one at each step's row description or completion.
    if (!Array.isArray(this._results)) this._results = [this._results];
    if (this.settings.size > 0) this._results = this._results.filter((_, i) => !this.settings.has(i));
    super.handleReadyForQuery(connection);
  }

  handleError(err: Error, connection: WireConnection): void {
    this.learnParsed();
    super.handleError(err, connection);
  }

  /** Marks the named statements whose Parse completed as prepared on the connection. */
  private learnParsed(): void {
    if (!this.connection) return;
    this.connection.removeListener('parseComplete', this.onParseComplete);
    for (const { name, text } of this.parses.slice(0, this.parsed)) if (name) this.connection.parsedStatements[name] = text;
    this.connection = undefined;
  }
}
