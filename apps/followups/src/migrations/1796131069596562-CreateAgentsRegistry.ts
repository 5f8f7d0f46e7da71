import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agents registry and turn promises (seed 002 "Follow-ups e retornos"): an agent has immutable
 * versions whose `followup_enabled` and `flow_ids` bound what it may enroll contacts into; a
 * turn's promises are kept once per (agent, turn, position), so the runtime may record a turn again.
 */
export class CreateAgentsRegistry1796131069596562 implements MigrationInterface {
  name = 'CreateAgentsRegistry1796131069596562';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agents (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        name text NOT NULL,
        version integer NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX agents_organization_idx ON agents (organization_id, created_at)`);
    await q.query(`
      CREATE TABLE agent_versions (
        agent_id uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        version integer NOT NULL,
        followup_enabled boolean NOT NULL,
        flow_ids uuid[] NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (agent_id, version)
      )`);
    await q.query(`
      CREATE TABLE turn_promises (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        agent_id uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        turn_id text NOT NULL,
        position integer NOT NULL,
        contact_id uuid NOT NULL,
        conversation_id uuid NULL,
        text text NOT NULL,
        due_at timestamptz NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT turn_promises_turn_position UNIQUE (agent_id, turn_id, position)
      )`);
    await q.query(`CREATE INDEX turn_promises_list_idx ON turn_promises (organization_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE turn_promises`);
    await q.query(`DROP TABLE agent_versions`);
    await q.query(`DROP TABLE agents`);
  }
}
