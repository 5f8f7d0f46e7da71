import { Inject, Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type LinkedinRelationEventData, OutboxLinkedinEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { decisionRequested, EnrollmentsService } from '../enrollments/enrollments.service.js';
import { ActionsRepository } from '../review/actions.repository.js';

/**
 * An accepted LinkedIn invitation (the dispatcher's `outbox.linkedin.relation_accepted`, from Unipile
 * `new_relation`) wakes the enrollment whose invitation it was: the same write as a reply (the
 * compare-and-set bump with the event lease, pending and approved actions invalidated), then
 * `outreach.decision.requested` reason `invitation_accepted`, id `accepted:{action_id}`, when the
 * campaign is active and outreach is not stopped (else the sweep asks after resume). The invitation
 * is found by the member the approved action was sent to, on a campaign of that LinkedIn account.
 */
@Injectable()
export class InvitationAcceptedConsumer {
  constructor(
    private readonly enrollments: EnrollmentsService,
    private readonly actions: ActionsRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @OnBusMessage(OutboxLinkedinEvents.RelationAccepted)
  async onAccepted(message: BusMessage<LinkedinRelationEventData>, tx: Tx): Promise<void> {
    const d = message.data;
    const org = message.organization_id;
    if (!org || !d?.sender_id || !d.provider_id) return;
    const found = await this.actions.acceptedConnection(tx, org, d.sender_id, d.provider_id, d.public_identifier);
    if (!found) return;
    const eventFollows = found.campaign_active && !found.stopped;
    const version = await this.enrollments.interrupt(tx, found.enrollment_id, eventFollows);
    if (version !== null && eventFollows) {
      await tx.publish(decisionRequested(org, `accepted:${found.action_id}`, { enrollment_id: found.enrollment_id, reason: 'invitation_accepted', ref: found.action_id }));
    }
    this.logger.info({ event: 'outreach.invitation_accepted', organization_id: org, enrollment_id: found.enrollment_id, action_id: found.action_id, event_sent: version !== null && eventFollows }, 'LinkedIn invitation accepted');
  }
}
