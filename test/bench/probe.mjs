// Preloaded into a service by the benchmarks (`node --import test/bench/probe.mjs dist/apps/<svc>/src/main.js`,
// see harness.ts `startService`): counts what the process sends to PostgreSQL and RabbitMQ, without
// any change to the service. On SIGWINCH (ignored by default; Nest's shutdown hooks take SIGUSR2) it writes the counts so far, as JSON, to
// `$BENCH_PROBE_DIR/<pid>.json` (written beside and renamed, so a reader never sees half a file):
//   statements    query calls on any pg client, BEGIN/START TRANSACTION/COMMIT/ROLLBACK not included
//   transactions  COMMITs and ROLLBACKs of explicit transactions, plus each statement outside one
//   settings      plan settings statements a folded query sends around its generic-plan steps
//                 (libs/database genericPlan; `set_config`, a few µs on the server), not in `statements`
//   roundTrips    every query call, BEGIN/COMMIT/ROLLBACK included (what the server is woken for)
//   published     AMQP messages published (events, commands, RPC requests and replies)
//   delivered     AMQP messages delivered to the process's consumers
//   at            when the counts were taken, epoch ms
//   byStatement   with BENCH_PROBE_STATEMENTS=1 only: statement text (whitespace folded, the first
//                 160 characters, numbered placeholders and literal lists as they come) -> calls
//   byPublished   with BENCH_PROBE_STATEMENTS=1 only: routing key (an event's type, a queue's name
//                 for a message sent to a queue, an RPC's reply queue folded to `reply:`) -> messages
//   byDelivered   with BENCH_PROBE_STATEMENTS=1 only: the message's type (else its routing key) -> messages
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const counts = { statements: 0, settings: 0, transactions: 0, roundTrips: 0, published: 0, delivered: 0 };
const byStatement = process.env.BENCH_PROBE_STATEMENTS === '1' ? {} : null;
const byPublished = byStatement ? {} : null;
const byDelivered = byStatement ? {} : null;
/** A routing key as a count's key: RPC reply queues (one per client) fold into one. */
const keyOf = (key) => (/^amq\.gen-|reply/i.test(String(key)) ? 'reply:' : String(key));

// Every pool's client class (libs/database PreparingClient) extends pg.Client and calls its query.
const pg = require('pg');
const query = pg.Client.prototype.query;
const OPENS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const CLOSES = /^\s*(COMMIT|ROLLBACK|END)\s*;?\s*$/i;
pg.Client.prototype.query = function probedQuery(config, values, callback) {
  const text = typeof config === 'string' ? config : typeof config?.text === 'string' ? config.text : '';
  counts.roundTrips++;
  // A folded query (libs/database FoldedQuery) is one round trip of several statements.
  for (const step of Array.isArray(config?.steps) ? config.steps.map((s) => s.sql) : [text]) {
    if (OPENS.test(step)) this.__benchInTx = true;
    else if (CLOSES.test(step)) {
      if (this.__benchInTx) counts.transactions++;
      this.__benchInTx = false;
    } else {
      counts.statements++;
      if (!this.__benchInTx) counts.transactions++;
      if (byStatement) {
        const key = step.replace(/\s+/g, ' ').trim().slice(0, 160);
        byStatement[key] = (byStatement[key] ?? 0) + 1;
      }
    }
  }
  // Statements a folded query adds of its own (libs/database: the plan settings around a generic-plan step).
  counts.settings += Number(config?.settingsSteps ?? 0);
  return query.call(this, config, values, callback);
};

// amqplib by file (its package exports hide lib/): the same module instances the service loads.
const amqplibDir = path.dirname(require.resolve('amqplib'));
const { Channel } = require(path.join(amqplibDir, 'lib/channel_model.js'));
const { BaseChannel } = require(path.join(amqplibDir, 'lib/channel.js'));
const publish = Channel.prototype.publish;
Channel.prototype.publish = function probedPublish(...args) {
  counts.published++;
  if (byPublished) {
    const key = args[0] === '' ? `queue:${keyOf(args[1])}` : keyOf(args[1]);
    byPublished[key] = (byPublished[key] ?? 0) + 1;
  }
  return publish.apply(this, args);
};
// Bound in the channel's constructor, so patched before any channel exists.
const handleDelivery = BaseChannel.prototype.handleDelivery;
BaseChannel.prototype.handleDelivery = function probedDelivery(message) {
  counts.delivered++;
  if (byDelivered) {
    const key = message?.properties?.type ?? message?.fields?.routingKey;
    const k = keyOf(key);
    byDelivered[k] = (byDelivered[k] ?? 0) + 1;
  }
  return handleDelivery.call(this, message);
};

process.on('SIGWINCH', () => {
  const dir = process.env.BENCH_PROBE_DIR;
  if (!dir) return;
  const file = path.join(dir, `${process.pid}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify({ ...counts, ...(byStatement ? { byStatement, byPublished, byDelivered } : {}), at: Date.now() }));
  renameSync(`${file}.tmp`, file);
});
