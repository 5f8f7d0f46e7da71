import { Injectable } from '@nestjs/common';
import { MessagingRpc, OutboxRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { RpcClient } from './rpc.js';

/** An id a request names in its body, that the service would store (contact, conversation or sender). */
export interface Reference {
  /** The request field, for the error (`contact_id`, `settings.sender.sender_id`). */
  field: string;
  kind: 'contact' | 'conversation' | 'sender';
  /** Absent or null: nothing to check. */
  id: string | null | undefined;
  /** For a sender: the channel it must send on. */
  channel?: string;
}

/**
 * Tenancy of the ids a request asks a service to store (DESIGN §3, §5 "Nobody crosses a tenant"):
 * a contact or conversation id must name one of the caller's organization in messaging, a sender
 * id one of its senders in the outbox-dispatcher, read from their owners at the time of the call.
 * An id of another organization gets the same 404 as an id of nothing, so the answer never
 * confirms that another tenant's id exists. Used by the RPC edges that take such ids from the
 * gateway (followups' flows, enrollments and returns; outreach's campaigns).
 */
@Injectable()
export class OwnedReferences {
  constructor(private readonly rpc: RpcClient) {}

  /**
   * Checks every reference (in parallel); resolves when all belong to `organizationId`.
   * @throws AppError not_found (`details.field` names the first one that does not),
   *   validation_failed (a sender of another channel), service_unavailable (an owner did not answer)
   */
  async require(organizationId: string, references: Reference[]): Promise<void> {
    const present = references.filter((r): r is Reference & { id: string } => typeof r.id === 'string' && r.id !== '');
    const problems = await Promise.all(present.map((reference) => this.problemOf(organizationId, reference)));
    const first = problems.find((problem) => problem !== undefined);
    if (first) throw first;
  }

  private async problemOf(organizationId: string, reference: Reference & { id: string }): Promise<AppError | undefined> {
    const notFound = new AppError(ErrorCode.NotFound, `${reference.kind} not found`, { field: reference.field });
    try {
      if (reference.kind === 'contact') await this.rpc.call('messaging', MessagingRpc.ContactGet, { organization_id: organizationId, contact_id: reference.id });
      else if (reference.kind === 'conversation') await this.rpc.call('messaging', MessagingRpc.ConversationGet, { organization_id: organizationId, conversation_id: reference.id });
      else {
        const sender = await this.rpc.call('outbox-dispatcher', OutboxRpc.SenderGet, { organization_id: organizationId, sender_id: reference.id });
        if (reference.channel && sender.channel !== reference.channel) {
          return new AppError(ErrorCode.ValidationFailed, `${reference.field} must be a ${reference.channel} sender`, [{ field: reference.field, problems: [`must be a ${reference.channel} sender`] }]);
        }
      }
      return undefined;
    } catch (err) {
      if (err instanceof AppError && (err.code === ErrorCode.NotFound || err.code === ErrorCode.SenderNotFound)) return notFound;
      throw err;
    }
  }
}
