import type { DataSource, EntityManager } from 'typeorm';
import type { OutgoingMessage } from '@touchpoint/contracts';

/** The notification channel the relay of a schema listens on (notified by a trigger on insert). */
export const outboxChannel = (schema: string): string => `outbox_${schema}`;

/** A unit of work: the transaction's manager plus the outbox (DESIGN §2). */
export interface Tx {
  readonly manager: EntityManager;
  /** Runs raw SQL in the transaction; returns the rows. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Writes events or commands into this schema's `outbox_events` in the same transaction, so they
   * are published if and only if the transaction commits. A message whose `event_id` is already
   * in the outbox is ignored (same cause → same id → one message).
   */
  publish(messages: OutgoingMessage | OutgoingMessage[]): Promise<void>;
}

export type IsolationLevel = 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';

/**
 * Runs `work` in one transaction that also carries the outbox. `now` stamps `occurred_at`
 * (UTC ISO-8601).
 */
export async function runInTransaction<T>(
  dataSource: DataSource,
  schema: string,
  work: (tx: Tx) => Promise<T>,
  options: { isolation?: IsolationLevel; now?: () => Date } = {},
): Promise<T> {
  const now = options.now ?? (() => new Date());
  const run = async (manager: EntityManager): Promise<T> => {
    const tx: Tx = {
      manager,
      query: (sql, params) => manager.query(sql, params),
      publish: async (input) => {
        const messages = Array.isArray(input) ? input : [input];
        if (messages.length === 0) return;
        const occurredAt = now().toISOString();
        const values: unknown[] = [];
        const rows = messages.map((m, i) => {
          values.push(m.event_id, m.type, m.organization_id, JSON.stringify({ ...m, occurred_at: occurredAt }));
          const b = i * 4;
          return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}::jsonb)`;
        });
        await manager.query(
          `INSERT INTO outbox_events (event_id, type, organization_id, payload) VALUES ${rows.join(', ')}
           ON CONFLICT (event_id) DO NOTHING`,
          values,
        );
      },
    };
    return work(tx);
  };
  return options.isolation ? dataSource.transaction(options.isolation, run) : dataSource.transaction(run);
}
