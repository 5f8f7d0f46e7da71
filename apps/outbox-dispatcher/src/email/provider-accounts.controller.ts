import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type EmailHeadersQuery,
  type EmailHeadersView,
  OutboxAccountRpc,
  type OutboxAccountCreateData,
  type OutboxProspectCapData,
  type OutboxProspectCapCheckData,
  type OutboxProspectCapCheckResult,
  type OutboxSuppressionData,
  OutreachDispatcherRpc,
  type ProviderAccountLookup,
  type SuppressionCheckData,
  type SuppressionCheckResult,
  type OutboxSuppressionAddResult,
  type OutboxSuppressionListData,
  type OutboxSuppressionPage,
  type OutboxSuppressionRemoveResult,
} from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { OnRpc } from '@touchpoint/runtime';
import { ProspectCapService } from '../prospect-cap/prospect-cap.service.js';
import { SendersService } from '../senders/senders.service.js';
import { SuppressionsService } from '../suppressions/suppressions.service.js';
import { NylasEmailAdapter } from '../providers/email/nylas.adapter.js';
import { ProviderAccountsService } from './provider-accounts.service.js';

/**
 * RPCs of the email and LinkedIn side of the dispatcher: provider accounts as senders, the
 * account → organization lookup of the webhook ingress, the prospect cap override, the
 * do-not-contact check outreach reads at enroll, decision and execution time (seed 003 §5
 * `contact_suppressions`: read fresh), and one Nylas message read with its headers.
 */
@Controller()
export class ProviderAccountsController {
  constructor(
    private readonly accounts: ProviderAccountsService,
    private readonly cap: ProspectCapService,
    private readonly senders: SendersService,
    private readonly nylas: NylasEmailAdapter,
    private readonly suppressionList: SuppressionsService,
  ) {}

  @OnRpc(OutboxAccountRpc.Create)
  create(@Payload() data: OutboxAccountCreateData) {
    return this.accounts.create(data);
  }

  @OnRpc(OutreachDispatcherRpc.SenderLookupByAccount)
  lookup(@Payload() data: ProviderAccountLookup) {
    return this.accounts.lookup(data);
  }

  @OnRpc(OutboxAccountRpc.ProspectCapSet)
  setCap(@Payload() data: OutboxProspectCapData) {
    return this.cap.setOrganizationCap(data?.organization_id, data?.prospect_emails_per_day ?? null);
  }

  @OnRpc(OutboxAccountRpc.ProspectCapGet)
  getCap(@Payload() data: { organization_id: string }) {
    return this.cap.organizationCap(data?.organization_id);
  }

  @OnRpc(OutboxAccountRpc.ProspectCapCheck)
  checkCap(@Payload() data: OutboxProspectCapCheckData): Promise<OutboxProspectCapCheckResult> {
    if (typeof data?.organization_id !== 'string' || typeof data.to !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'organization_id and to are required');
    return this.cap.peek(data.organization_id, data.sender_id ?? null, data.to);
  }

  /** @throws AppError validation_failed, invalid_recipient */
  @OnRpc(OutboxAccountRpc.SuppressionRemove)
  removeSuppression(@Payload() data: OutboxSuppressionData): Promise<OutboxSuppressionRemoveResult> {
    return this.suppressionList.remove(data);
  }

  /** @throws AppError validation_failed, invalid_cursor */
  @OnRpc(OutboxAccountRpc.SuppressionList)
  listSuppressions(@Payload() data: OutboxSuppressionListData): Promise<OutboxSuppressionPage> {
    return this.suppressionList.list(data);
  }

  /** Answered once nothing more to the value can reach the provider (`SuppressionsService.addInForce`). @throws AppError validation_failed, invalid_recipient */
  @OnRpc(OutboxAccountRpc.SuppressionAdd)
  async addSuppression(@Payload() data: OutboxSuppressionData): Promise<OutboxSuppressionAddResult> {
    const added = await this.suppressionList.addInForce(data);
    return { channel: data.channel, ...added };
  }

  /** The subset of `values` on the organization's do-not-contact list, keyed like the senders key them. */
  @OnRpc(OutreachDispatcherRpc.SuppressionCheck)
  suppressions(@Payload() data: SuppressionCheckData): Promise<SuppressionCheckResult> {
    return this.suppressionList.check(data);
  }

  /**
   * Reads with the grant of the mailbox the message arrived on (`sender_id`, required: any other
   * grant gets a 404 from Nylas).
   * @throws AppError validation_failed (no organization, message or mailbox), sender_not_found (no such mailbox), service_unavailable (Nylas did not answer 200)
   */
  @OnRpc(OutreachDispatcherRpc.EmailHeaders)
  async headers(@Payload() query: EmailHeadersQuery): Promise<EmailHeadersView> {
    if (typeof query?.organization_id !== 'string' || typeof query.provider_message_id !== 'string' || typeof query.sender_id !== 'string' || query.sender_id === '') {
      throw new AppError(ErrorCode.ValidationFailed, 'organization_id, provider_message_id and sender_id (the mailbox it arrived on) are required');
    }
    const sender = await this.senders.credentialsFor(query.sender_id);
    if (!sender || sender.organizationId !== query.organization_id) throw new AppError(ErrorCode.SenderNotFound, 'no such mailbox');
    try {
      return await this.nylas.readHeaders(sender, query.provider_message_id);
    } catch (err) {
      throw new AppError(ErrorCode.ServiceUnavailable, `the message could not be read: ${(err as Error).message}`);
    }
  }
}
