import pg from 'pg';
import { ensureDatabase } from '@touchpoint/database';
import { dropNamespace, TEST_AMQP_URL, TEST_DATABASE_URL, vacuumCatalogs } from '@touchpoint/testing';

/**
 * Creates the test database if missing, removes worlds left by test runs that died more than
 * two hours ago (a run still going elsewhere on this machine keeps its own), and vacuums the
 * catalogs those worlds churn (`vacuumCatalogs`). Given namespaces as
 * arguments (`t_chaos_1a2b3c`, as `npm run chaos` prints it), it drops those now instead.
 */
async function prepareTestDatabase(namespaces: string[]): Promise<void> {
  for (const ns of namespaces) if (!/^t_[a-z0-9_]+$/.test(ns)) throw new Error(`${ns} is not a test world's namespace (t_<label>_<hex>)`);
  await ensureDatabase(TEST_DATABASE_URL);
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  try {
    await pool.query(`CREATE TABLE IF NOT EXISTS public.test_namespaces (namespace text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())`);
    const drop = namespaces.length ? namespaces : (await pool.query<{ namespace: string }>(`SELECT namespace FROM public.test_namespaces WHERE created_at < now() - interval '2 hours'`)).rows.map((r) => r.namespace);
    const schemasOf = async (ns: string) => (await pool.query(`SELECT 1 FROM pg_namespace WHERE nspname LIKE $1`, [`${ns}\\_%`])).rowCount ?? 0;
    for (const namespace of drop) {
      const before = await schemasOf(namespace);
      await dropNamespace(pool, TEST_AMQP_URL, namespace);
      const left = await schemasOf(namespace);
      // Asked by name (an operator cleaning up after a killed run): say what went, and fail if some stayed.
      if (namespaces.length) process.stdout.write(`${namespace}: ${before - left} schemas dropped, ${left} left; its test_namespaces row and bus queues and exchanges deleted\n`);
      if (left) process.exitCode = 1;
    }
    if (!namespaces.length) await vacuumCatalogs(pool);
  } finally {
    await pool.end();
  }
}

await prepareTestDatabase(process.argv.slice(2));
