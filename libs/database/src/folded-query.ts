import pg from 'pg';
import pgUtils from 'pg/lib/utils.js';

/** pg's own mapping of a parameter to its text form (dates, arrays, buffers, JSON), as its `Query` binds them. */
const { prepareValue } = pgUtils as { prepareValue: (value: unknown) => unknown };

/** One SQL statement and its parameters (`$1`…), as a step of a folded round trip. */
export interface Statement {
  sql: string;
  params?: unknown[];
}

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
 */
export class FoldedQuery extends QueryBase {
  /** The name each Parse this query sent was for ('' unnamed), in order; then how many completed. */
  private readonly parses: Array<{ name: string; text: string }> = [];
  private parsed = 0;
  private connection?: WireConnection;
  private readonly onParseComplete = () => void this.parsed++;

  constructor(
    /** The statements, in the order they run (read by tools that count statements). */
    readonly steps: Statement[],
    private readonly nameOf: (sql: string) => string | undefined,
    callback: (err: Error | null, results?: pg.QueryResult[]) => void,
  ) {
    super({ text: steps.map((s) => s.sql).join(';\n'), callback: callback as (err: Error | null, result?: unknown) => void });
  }

  requiresPreparation(): boolean {
    return true;
  }

  /** Writes every step and the Sync (pg corks the socket around this: one write). */
  prepare(connection: WireConnection): void {
    this.connection = connection;
    connection.on('parseComplete', this.onParseComplete);
    for (const step of this.steps) {
      const name = step.params && step.params.length > 0 ? (this.nameOf(step.sql) ?? '') : '';
      if (!name || connection.parsedStatements[name] !== step.sql) {
        connection.parse({ text: step.sql, name, types: [] });
        this.parses.push({ name, text: step.sql });
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
