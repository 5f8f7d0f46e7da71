import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** What the dispatcher's accepted LinkedIn sends to one person say (`log_context.linkedin_action`). */
export interface LinkedinSendsTo {
  /** A message was accepted by the provider. */
  messaged: boolean | null;
  /** An invitation was accepted by the provider. */
  invited: boolean | null;
}

/** Every SQL statement of LinkedIn relations (`linkedin_relations`) and the state read beside them. */
@Injectable()
export class LinkedinRelationsRepository {
  /** The status of a live LinkedIn sender of the organization, or null. `senderId` may be any text. */
  async senderStatus(db: Queryable, organizationId: string, senderId: string): Promise<string | null> {
    const [sender] = await rowsOf<{ status: string }>(db, `SELECT status FROM senders WHERE id::text = $1 AND organization_id = $2 AND removed_at IS NULL AND channel = 'linkedin'`, [senderId, organizationId]);
    return sender?.status ?? null;
  }

  /** The live LinkedIn sender of a provider account, or null. */
  async senderOfAccount(db: Queryable, accountId: string): Promise<{ id: string; organization_id: string } | null> {
    const [sender] = await rowsOf<{ id: string; organization_id: string }>(db, `SELECT id, organization_id FROM senders WHERE channel = 'linkedin' AND provider_account_id = $1 AND removed_at IS NULL`, [accountId]);
    return sender ?? null;
  }

  /** The provider id of an accepted relation of the sender to the person (by provider id or `/in/` slug), or null. */
  async acceptedRelation(db: Queryable, organizationId: string, senderId: string, providerId: string, publicIdentifier: string | null): Promise<string | null> {
    const [relation] = await rowsOf<{ provider_id: string }>(db, `SELECT provider_id FROM linkedin_relations WHERE sender_id::text = $1 AND organization_id = $2 AND (provider_id = $3 OR ($4::text IS NOT NULL AND public_identifier = $4)) LIMIT 1`, [
      senderId,
      organizationId,
      providerId,
      publicIdentifier,
    ]);
    return relation?.provider_id ?? null;
  }

  /** Whether the sender's accepted LinkedIn sends to `providerId` include a message or an invitation. */
  async sendsTo(db: Queryable, organizationId: string, senderId: string, providerId: string): Promise<LinkedinSendsTo | null> {
    const [row] = await rowsOf<LinkedinSendsTo>(
      db,
      `SELECT bool_or(log_context->>'linkedin_action' = 'message') AS messaged, bool_or(log_context->>'linkedin_action' = 'invite') AS invited
         FROM message_outbox
        WHERE organization_id = $1 AND sender_id::text = $2 AND channel = 'linkedin' AND pacing_key = $3 AND status = 'accepted'`,
      [organizationId, senderId, providerId],
    );
    return row ?? null;
  }

  /** Records an accepted relation; false when it was recorded already (a repeat is a no-op). */
  async insertRelation(db: Queryable, r: { senderId: string; providerId: string; organizationId: string; publicIdentifier: string | null; connectedAt: Date }): Promise<boolean> {
    const inserted = await rowsOf<{ provider_id: string }>(
      db,
      `INSERT INTO linkedin_relations (sender_id, provider_id, organization_id, public_identifier, connected_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (sender_id, provider_id) DO NOTHING RETURNING provider_id`,
      [r.senderId, r.providerId, r.organizationId, r.publicIdentifier, r.connectedAt],
    );
    return inserted.length > 0;
  }
}
