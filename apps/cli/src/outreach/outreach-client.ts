import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { ServiceConfig } from '@touchpoint/config';
import { type ActionView, OutboxAccountRpc, type OutboxProspectCapView, OutreachRpc, type RejectThen, type ReviewQueuePage } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { RpcClient } from '@touchpoint/runtime';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';
import { CLI_LOGGER } from '../output/cli-logger.js';

/**
 * The review queue of the outreach service and the organization's daily prospect cap (held by the
 * outbox-dispatcher), over the same RPCs the gateway forwards to (the CLI holds no outreach rule). Connects to the broker on first use; closed when the command ends.
 */
@Injectable()
export class OutreachClient implements OnApplicationShutdown {
  private rpc?: RpcClient;

  constructor(
    @Inject(CLI_CONFIG) private readonly config: CliConfig,
    @Inject(CLI_LOGGER) private readonly logger: Logger,
  ) {}

  list(organizationId: string, limit?: number): Promise<ReviewQueuePage> {
    return this.client().call('outreach', OutreachRpc.ActionList, { organization_id: organizationId, limit });
  }

  approve(organizationId: string, actionId: string, memberId: string, payload?: Record<string, string>): Promise<ActionView> {
    return this.client().call('outreach', OutreachRpc.ActionApprove, { organization_id: organizationId, action_id: actionId, actor: { member_id: memberId }, payload });
  }

  reject(organizationId: string, actionId: string, memberId: string, then: RejectThen, reason?: string): Promise<ActionView> {
    return this.client().call('outreach', OutreachRpc.ActionReject, { organization_id: organizationId, action_id: actionId, actor: { member_id: memberId }, then, reason });
  }

  prospectCap(organizationId: string): Promise<OutboxProspectCapView> {
    return this.client().call('outbox-dispatcher', OutboxAccountRpc.ProspectCapGet, { organization_id: organizationId });
  }

  /** `perDay` null → back to the default. */
  setProspectCap(organizationId: string, perDay: number | null): Promise<OutboxProspectCapView> {
    return this.client().call('outbox-dispatcher', OutboxAccountRpc.ProspectCapSet, { organization_id: organizationId, prospect_emails_per_day: perDay });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.rpc?.onApplicationShutdown();
  }

  private client(): RpcClient {
    this.rpc ??= new RpcClient(this.config as unknown as ServiceConfig, this.logger);
    return this.rpc;
  }
}
