import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { type IsolationLevel, runInTransaction, type Tx } from '@touchpoint/database';
import { Clock } from '@touchpoint/time';
import { SERVICE_DEFINITION, type ServiceDefinition, schemaOf } from './tokens.js';
import { SERVICE_SCHEMA } from '@touchpoint/contracts';

/**
 * Runs a function in one transaction of the service's schema that also carries the outbox
 * (DESIGN §2): events published through `tx.publish` commit with the business rows or not at all.
 */
@Injectable()
export class UnitOfWork {
  readonly schema: string;

  constructor(
    readonly dataSource: DataSource,
    private readonly clock: Clock,
    @Inject(SERVICE_DEFINITION) definition: ServiceDefinition,
  ) {
    this.schema = schemaOf(SERVICE_SCHEMA[definition.service], definition.config);
  }

  /** `runInTransaction` on the service's schema and clock (`lockTimeoutMs`: see there). */
  run<T>(work: (tx: Tx) => Promise<T>, options: { isolation?: IsolationLevel; lockTimeoutMs?: number } = {}): Promise<T> {
    return runInTransaction(this.dataSource, this.schema, work, { ...options, now: () => this.clock.now() });
  }
}
