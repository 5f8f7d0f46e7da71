import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The per-number window of follow-up sends in flight (seed 000 "window of follow-up messages
 * QUEUED/PROCESSING per number"): every send release counts a number's `queued` sends, so they get
 * a partial index that holds only the few in flight, not the history. Enrollments parked for want
 * of a usable number take the seed's word for it, `instance_unavailable` (was `sender_unavailable`),
 * so the wake-up on a number's return still finds them.
 */
export class AddInFlightWindow1796130508922 implements MigrationInterface {
  name = 'AddInFlightWindow1796130508922';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX effects_queued_by_sender_idx ON effects (sender_id) WHERE kind = 'send' AND status = 'queued'`);
    await q.query(`UPDATE enrollments SET reason = 'instance_unavailable' WHERE status = 'dormente' AND reason = 'sender_unavailable'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE enrollments SET reason = 'sender_unavailable' WHERE status = 'dormente' AND reason = 'instance_unavailable'`);
    await q.query(`DROP INDEX effects_queued_by_sender_idx`);
  }
}
