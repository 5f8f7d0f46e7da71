import type { DataSource } from 'typeorm';

/**
 * Runs `work` while holding a session-level Postgres advisory lock named `key` (DESIGN §1: a pass
 * that must run alone). Waits for the lock.
 */
export async function withAdvisoryLock<T>(dataSource: DataSource, key: string, work: () => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
    try {
      return await work();
    } finally {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
    }
  } finally {
    await runner.release();
  }
}

/**
 * Runs `work` only if the advisory lock `key` is free right now; returns `{ ran: false }` otherwise.
 * For periodic passes that must not overlap across replicas (sweeps, retention).
 */
export async function tryWithAdvisoryLock<T>(dataSource: DataSource, key: string, work: () => Promise<T>): Promise<{ ran: boolean; result?: T }> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    const [{ locked }] = await runner.query('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [key]);
    if (!locked) return { ran: false };
    try {
      return { ran: true, result: await work() };
    } finally {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
    }
  } finally {
    await runner.release();
  }
}
