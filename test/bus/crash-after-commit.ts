/**
 * Child process of outbox-relay.e2e-spec: migrates the outreach schema, commits one business row
 * and its event in one transaction, and kills itself with SIGKILL before any relay could run.
 */
import 'reflect-metadata';
import { loadConfig, ServiceConfig } from '@touchpoint/config';
import { BUS_MIGRATIONS, createServiceDataSource, migrateServiceSchema, runInTransaction } from '@touchpoint/database';
import { CreateProbeTable1764460000001, probeEvent } from './probe.js';

const config = loadConfig(ServiceConfig);
const schema = `${config.DB_SCHEMA_PREFIX}outreach`;
const dataSource = createServiceDataSource({
  url: config.DATABASE_URL,
  schema,
  entities: [],
  migrations: [...BUS_MIGRATIONS, CreateProbeTable1764460000001],
});
await dataSource.initialize();
await migrateServiceSchema(dataSource);
const eventId = process.argv[2];
await runInTransaction(dataSource, schema, async (tx) => {
  await tx.query(`INSERT INTO probe_handled (event_id, seq) VALUES ($1, -1)`, [`business-row-of-${eventId}`]);
  await tx.publish(probeEvent(eventId));
});
process.kill(process.pid, 'SIGKILL');
