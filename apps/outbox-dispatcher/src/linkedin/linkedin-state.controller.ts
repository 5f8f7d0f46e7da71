import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type LinkedinRelationAcceptedData, type LinkedinRelationEventData, type LinkedinStateQuery, type LinkedinStateView, OutboxLinkedinEvents, OutboxLinkedinRpc, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { poolOf } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { UnitOfWork, OnRpc } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { LinkedinRelationsRepository } from './linkedin-relations.repository.js';

/**
 * The LinkedIn relation of a person to a sender account (seed 003 §4.2 "linkedin_state"): an
 * accepted invitation (Unipile `new_relation`, kept in `linkedin_relations`) or a message that went
 * out → `connected` (an accepted row wins over any other); an invitation that went out → `invited`;
 * nothing → `none`. The chat's messages live in messaging, not here.
 */
@Controller()
export class LinkedinStateController {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly relations: LinkedinRelationsRepository,
  ) {}

  @OnRpc(OutreachDispatcherRpc.LinkedinState)
  async state(@Payload() q: LinkedinStateQuery): Promise<LinkedinStateView> {
    if (typeof q?.organization_id !== 'string' || typeof q.sender_id !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'organization_id and sender_id are required');
    const db = poolOf(this.uow.dataSource);
    const senderConnected = (await this.relations.senderStatus(db, q.organization_id, q.sender_id)) === 'connected';
    const slug = publicIdentifierOf(q.linkedin_url);
    const relation = await this.relations.acceptedRelation(db, q.organization_id, q.sender_id, q.provider_id ?? '', slug);
    if (relation !== null) return { state: 'connected', sender_connected: senderConnected, provider_id: relation, messages: [] };
    if (!q.provider_id) return { state: 'none', sender_connected: senderConnected, provider_id: null, messages: [] };
    const row = await this.relations.sendsTo(db, q.organization_id, q.sender_id, q.provider_id.trim());
    const state = row?.messaged ? 'connected' : row?.invited ? 'invited' : 'none';
    return { state, sender_connected: senderConnected, provider_id: q.provider_id, messages: [] };
  }

  /**
   * Records an accepted relation of a LinkedIn account (idempotent) and tells the others with
   * `outbox.linkedin.relation_accepted` once per (sender, person).
   */
  @OnRpc(OutboxLinkedinRpc.RelationAccepted)
  async accepted(@Payload() data: LinkedinRelationAcceptedData): Promise<{ stored: boolean; sender_id: string | null }> {
    if (typeof data?.account_id !== 'string' || typeof data.provider_id !== 'string' || data.provider_id === '') throw new AppError(ErrorCode.ValidationFailed, 'account_id and provider_id are required');
    return this.uow.run(async (tx) => {
      const sender = await this.relations.senderOfAccount(tx, data.account_id);
      if (!sender) return { stored: false, sender_id: null };
      const slug = data.public_identifier ?? publicIdentifierOf(data.profile_url ?? null);
      const inserted = await this.relations.insertRelation(tx, { senderId: sender.id, providerId: data.provider_id, organizationId: sender.organization_id, publicIdentifier: slug, connectedAt: this.clock.now() });
      if (inserted) {
        const event: LinkedinRelationEventData = { sender_id: sender.id, provider_id: data.provider_id, public_identifier: slug };
        await tx.publish({ event_id: `${OutboxLinkedinEvents.RelationAccepted}:${sender.id}:${data.provider_id}`, type: OutboxLinkedinEvents.RelationAccepted, organization_id: sender.organization_id, data: event });
      }
      return { stored: true, sender_id: sender.id };
    });
  }
}

/** The `/in/{slug}` of a profile URL, lower-cased, or null. */
export function publicIdentifierOf(url: string | null | undefined): string | null {
  const match = url ? /linkedin\.com\/in\/([^/?#]+)/i.exec(url) : null;
  return match ? decodeURIComponent(match[1]!).toLowerCase() : null;
}
