import { Controller, type DynamicModule, Injectable, Module } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { BeforeBusBatch, OnBusMessage } from '@touchpoint/bus';
import type { ServiceConfig } from '@touchpoint/config';
import { type BusMessage, PlatformEvents, type ServiceName } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { PlatformModule } from '@touchpoint/runtime';

/**
 * The tables the probe handlers write one row into per handled message (no unique key on purpose):
 * `probe_handled` (ProbeConsumer), `probe_tallied` (ProbeTallyConsumer, a second handler of the type).
 */
export class CreateProbeTable1764460000001 implements MigrationInterface {
  name = 'CreateProbeTable1764460000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE probe_handled (id bigserial PRIMARY KEY, event_id text NOT NULL, seq integer, handled_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    await q.query(`CREATE TABLE probe_tallied (id bigserial PRIMARY KEY, event_id text NOT NULL)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE probe_tallied`);
    await q.query(`DROP TABLE probe_handled`);
  }
}

/** A second probe type (a private wake-up: its handler reads no message), for batches of mixed arrivals. */
export const PROBE_WAKE = 'platform.probe.wake';

/** Behaviour switches a test flips at run time. */
export const probeControl = {
  /** event ids whose handler throws. */
  failing: new Set<string>(),
  /** Throw for every message while true. */
  failAll: false,
  /** When each event's handler was entered (ms since epoch), across retries. */
  attempts: new Map<string, number[]>(),
  /** While set, every handler waits for it inside its transaction (a handler still running across a broker cut). */
  gate: undefined as Promise<void> | undefined,
  /** The event ids of each consumer batch the preparer saw, in order. */
  batches: [] as string[][],
  /** The message types of each of those batches. */
  batchTypes: [] as string[][],
  /** While set, the batch preparer takes this advisory lock (a batch's lock wait; single messages never wait on it). */
  batchLockKey: undefined as number | undefined,
  /** `PROBE_WAKE` messages handled. */
  wakes: 0,
};

/** Handles `platform.probe.recorded`: notes the attempt in memory and writes the handled row. */
@Injectable()
export class ProbeConsumer {
  @BeforeBusBatch(PlatformEvents.ProbeRecorded, PROBE_WAKE)
  async prepareBatch(messages: BusMessage[], tx: Tx): Promise<void> {
    probeControl.batches.push(messages.map((m) => m.event_id));
    probeControl.batchTypes.push(messages.map((m) => m.type));
    if (probeControl.batchLockKey !== undefined) await tx.query(`SELECT pg_advisory_xact_lock($1)`, [probeControl.batchLockKey]);
  }

  @OnBusMessage(PlatformEvents.ProbeRecorded)
  async onProbe(message: BusMessage<{ seq?: number }>, tx: Tx): Promise<void> {
    probeControl.attempts.set(message.event_id, [...(probeControl.attempts.get(message.event_id) ?? []), Date.now()]);
    if (probeControl.gate) await probeControl.gate;
    if (probeControl.failAll || probeControl.failing.has(message.event_id)) {
      await tx.query(`SELECT 1`);
      throw new Error(`probe failure for ${message.event_id}`);
    }
    await tx.query(`INSERT INTO probe_handled (event_id, seq) VALUES ($1, $2)`, [message.event_id, message.data.seq ?? null]);
  }
}

/** Counts `PROBE_WAKE` messages handled. */
@Injectable()
export class ProbeWakeConsumer {
  @OnBusMessage(PROBE_WAKE)
  async onWake(): Promise<void> {
    probeControl.wakes++;
  }
}

/** A second handler of `platform.probe.recorded` (only with `probeService(…, { tally: true })`): one `probe_tallied` row per message. */
@Injectable()
export class ProbeTallyConsumer {
  @OnBusMessage(PlatformEvents.ProbeRecorded)
  async onProbe(message: BusMessage<{ seq?: number }>, tx: Tx): Promise<void> {
    await tx.query(`INSERT INTO probe_tallied (event_id) VALUES ($1)`, [message.event_id]);
  }
}

/** RPC probes: an echo and a handler that fails with a domain error. */
@Controller()
export class ProbeRpcController {
  @MessagePattern('probe.echo')
  echo(@Payload() data: unknown): unknown {
    return { echoed: data };
  }

  @MessagePattern('probe.conflict')
  conflict(): never {
    throw new AppError(ErrorCode.Conflict, 'probe conflict', { why: 'testing' });
  }

  @MessagePattern('probe.crash')
  crash(): never {
    throw new Error('secret internals');
  }
}

@Module({ providers: [ProbeConsumer, ProbeWakeConsumer], controllers: [ProbeRpcController] })
class ProbeConsumerModule {}

@Module({ providers: [ProbeTallyConsumer] })
class ProbeTallyModule {}

/** A service root module with the probe tables, optionally with the probe consumer (and with `tally`, its second handler). */
export function probeService(service: ServiceName, config: ServiceConfig, withConsumer: boolean, options: { tally?: boolean } = {}): DynamicModule {
  @Module({})
  class ProbeRoot {}
  return {
    module: ProbeRoot,
    imports: [PlatformModule.forService({ service, config, entities: [], migrations: [CreateProbeTable1764460000001] }), ...(withConsumer ? [ProbeConsumerModule] : []), ...(withConsumer && options.tally ? [ProbeTallyModule] : [])],
  };
}

/** A probe event with a fresh id. */
export function probeEvent(eventId: string, seq = 0) {
  return { event_id: eventId, type: PlatformEvents.ProbeRecorded, organization_id: null, data: { seq } };
}
