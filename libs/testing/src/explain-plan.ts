import type pg from 'pg';
import pgUtils from 'pg/lib/utils.js';
import { GENERIC_PLAN, GENERIC_PLAN_SETTINGS } from '@touchpoint/database';

const { prepareValue } = pgUtils as { prepareValue: (value: unknown) => unknown };

/**
 * The plan PostgreSQL runs `sql` with, as EXPLAIN prints it (not run), on `client`'s search_path:
 * - a statement marked by `genericPlan` (libs/database): its generic plan, built as a service
 *   connection builds it (`GENERIC_PLAN_SETTINGS`: no sequential scans, no hash or merge joins), the
 *   parameters' types inferred from the text as for the statement the service prepares;
 * - any other statement: the custom plan for these parameters (how service connections run it).
 * Leaves the connection's settings and prepared statements as they were.
 */
export async function explainPlan(client: pg.Client, sql: string, params: unknown[] = []): Promise<string> {
  const lines = (rows: { 'QUERY PLAN': string }[]) => rows.map((r) => r['QUERY PLAN']).join('\n');
  if (!sql.endsWith(GENERIC_PLAN) || params.length === 0) return lines((await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).rows);
  const literal = (value: unknown) => {
    const text = prepareValue(value);
    return text === null || text === undefined ? 'NULL' : client.escapeLiteral(String(text));
  };
  await client.query('BEGIN');
  try {
    await client.query(GENERIC_PLAN_SETTINGS);
    await client.query(`PREPARE tp_explained AS ${sql}`);
    return lines((await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE tp_explained(${params.map(literal).join(', ')})`)).rows);
  } finally {
    await client.query('ROLLBACK');
    // PREPARE outlives the rollback.
    await client.query('DEALLOCATE tp_explained').catch(() => undefined);
  }
}
