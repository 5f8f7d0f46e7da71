import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { type LinkedinStateQuery, type LinkedinStateView, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { UnitOfWork } from '@touchpoint/runtime';

/**
 * The LinkedIn relation of a person to a sender account, from what this dispatcher sent (seed 003
 * §4.2 "linkedin_state"): a message that went out → `connected` (LinkedIn only lets relations
 * message); an invitation that went out → `invited`; nothing → `none`. Accepted invitations
 * (Unipile `new_relation`) are not recorded yet, so a person who accepted reads `invited` until we
 * message them. The chat's messages live in messaging, not here.
 */
@Controller()
export class LinkedinStateController {
  constructor(private readonly uow: UnitOfWork) {}

  @MessagePattern(OutreachDispatcherRpc.LinkedinState)
  async state(@Payload() q: LinkedinStateQuery): Promise<LinkedinStateView> {
    if (typeof q?.organization_id !== 'string' || typeof q.sender_id !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'organization_id and sender_id are required');
    const [sender] = await this.uow.dataSource.query(`SELECT status FROM senders WHERE id::text = $1 AND organization_id = $2 AND removed_at IS NULL AND channel = 'linkedin'`, [q.sender_id, q.organization_id]);
    const senderConnected = sender?.status === 'connected';
    if (!q.provider_id) return { state: 'none', sender_connected: senderConnected, provider_id: null, messages: [] };
    const [row] = await this.uow.dataSource.query(
      `SELECT bool_or(log_context->>'linkedin_action' = 'message') AS messaged, bool_or(log_context->>'linkedin_action' = 'invite') AS invited
         FROM message_outbox
        WHERE organization_id = $1 AND sender_id::text = $2 AND channel = 'linkedin' AND pacing_key = $3 AND status = 'accepted'`,
      [q.organization_id, q.sender_id, q.provider_id.trim()],
    );
    const state = row?.messaged ? 'connected' : row?.invited ? 'invited' : 'none';
    return { state, sender_connected: senderConnected, provider_id: q.provider_id, messages: [] };
  }
}
