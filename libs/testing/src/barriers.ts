import { CONSUME_OUTCOMES, Metrics } from '@touchpoint/observability';
import type { SERVICE_SCHEMA } from '@touchpoint/contracts';
import type { TestWorld } from './index.js';

/**
 * Waiting in tests. `eventually` waits for something that must happen. A check that something
 * does NOT happen never sleeps for a while first: it waits on a barrier, an observable fact that
 * can only be true once the unwanted thing has had its chance (the duplicate delivery was taken
 * and judged a duplicate, a later event's inbox row is there, the run that would have sent is
 * done), then asserts the unwanted thing is absent.
 */

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; returns that value. */
export async function eventually<T>(probe: () => Promise<T> | T, timeoutMs = 10_000, intervalMs = 50): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as Exclude<T, false | null | undefined | 0 | ''>;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A started service (a Nest application): what the barriers read its metrics from. */
export interface ServiceApp {
  get<T>(token: new (...args: never[]) => T): T;
}

export type ConsumeOutcome = (typeof CONSUME_OUTCOMES)[number];

/**
 * How many bus messages `handler` (`ClassName.method`) of `app` has taken with `outcome` so far
 * (`touchpoint_bus_consumed_total`); 0 before the first.
 */
export async function consumedCount(app: ServiceApp, handler: string, outcome: ConsumeOutcome): Promise<number> {
  const { values } = await app.get(Metrics).busConsumed.get();
  return values.find((v) => v.labels.handler === handler && v.labels.outcome === outcome)?.value ?? 0;
}

/**
 * Barrier: resolves once `handler` of `app` has taken at least `count` messages with `outcome`
 * (read `consumedCount` before causing them).
 */
export async function untilConsumed(app: ServiceApp, handler: string, outcome: ConsumeOutcome, count: number, timeoutMs = 20_000): Promise<void> {
  await eventually(async () => (await consumedCount(app, handler, outcome)) >= count, timeoutMs);
}

/** Every handler's `duplicate` count of `app` now (handler → count), for `untilRedeliveryDiscarded`. */
export async function duplicateCounts(app: ServiceApp): Promise<Map<string, number>> {
  const { values } = await app.get(Metrics).busConsumed.get();
  return new Map(values.filter((v) => v.labels.outcome === 'duplicate').map((v) => [String(v.labels.handler), v.value]));
}

/**
 * Barrier for a message delivered more than once: resolves once every handler of `app` (whose
 * schema is `service`'s) that handled `eventId` — its inbox rows — has counted `redeliveries` more
 * duplicates than in `before` (from `duplicateCounts`, read before the deliveries). After that
 * each redelivery has been taken and discarded by the inbox: whatever it could have done is done.
 */
export async function untilRedeliveryDiscarded(world: TestWorld, app: ServiceApp, service: keyof typeof SERVICE_SCHEMA, eventId: string, before: Map<string, number>, redeliveries = 1, timeoutMs = 20_000): Promise<void> {
  await untilHandled(world, service, eventId, undefined, timeoutMs);
  const handlers = (await world.sql<{ handler: string }>(`SELECT handler FROM "${world.schema(service)}".inbox_events WHERE event_id = $1`, [eventId])).map((r) => r.handler);
  await eventually(async () => {
    const now = await duplicateCounts(app);
    return handlers.every((h) => (now.get(h) ?? 0) >= (before.get(h) ?? 0) + redeliveries);
  }, timeoutMs);
}

/**
 * Barrier: resolves once `service` has handled the event `eventId` (its inbox row is committed,
 * and with it everything the handler wrote in the same transaction). With `handler`, that
 * handler's row (`ClassName.method`).
 */
export async function untilHandled(world: TestWorld, service: keyof typeof SERVICE_SCHEMA, eventId: string, handler?: string, timeoutMs = 20_000): Promise<void> {
  const schema = world.schema(service);
  await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema}".inbox_events WHERE event_id = $1 AND ($2::text IS NULL OR handler = $2)`, [eventId, handler ?? null])).length > 0, timeoutMs);
}
