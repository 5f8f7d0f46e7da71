import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { poolOf } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import type { OutboxProspectCapView } from '@touchpoint/contracts';
import { Clock } from '@touchpoint/time';
import { ProspectCapRepository } from './prospect-cap.repository.js';

/** Prospect emails one mailbox sends per UTC day unless the organization overrides it (seed 003 §6). */
export const PROSPECT_EMAILS_PER_DAY_DEFAULT = 30;

/** What `claim_prospect_email_send` answered (see its migration). */
export type ProspectClaim = 'claimed' | 'already_claimed' | 'not_prospect' | 'refused';

/**
 * The daily prospect cap (seed 003 §6): one mailbox sends at most 30 prospect emails per UTC day
 * (`prospect_cap_settings` overrides it per organization; 0 stops every prospect send). A recipient
 * is a prospect unless the organization holds a CRM person with the address AND has emailed it; an
 * address that wrote to the organization never counts. The database function counts and refuses
 * in one statement, right before the provider call, for every email path (the check sits in the
 * email adapter, so CRM compose, bulk, scheduled and Outreach sends all go through it).
 */
@Injectable()
export class ProspectCapService {
  private readonly outcomes: Counter<'outcome'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly repository: ProspectCapRepository,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.outcomes = new Counter({ name: `${METRIC_PREFIX}outbox_prospect_cap_total`, help: 'Prospect cap checks of email sends, by outcome (claimed, already_claimed, not_prospect, refused)', labelNames: ['outcome'], registers: [metrics.registry] });
  }

  /** Counts the send of `entryId` against its mailbox's day, or refuses it. One statement. */
  async claim(entry: { entryId: string; organizationId: string; recipient: string }, senderId: string): Promise<ProspectClaim> {
    const outcome = await this.repository.claim(poolOf(this.uow.dataSource), {
      entryId: entry.entryId,
      organizationId: entry.organizationId,
      senderId,
      address: entry.recipient.trim().toLowerCase(),
      now: this.clock.now(),
      defaultPerDay: PROSPECT_EMAILS_PER_DAY_DEFAULT,
    });
    this.outcomes.inc({ outcome });
    if (outcome === 'refused') this.logger.warn({ event: 'outbox.prospect_cap_reached', organization_id: entry.organizationId, entry_id: entry.entryId, sender_id: senderId }, 'daily prospect cap reached; not sent');
    return outcome;
  }

  /**
   * Would the claim refuse an email to `recipient` from `senderId` now? The same rules as
   * `claim_prospect_email_send`, read only. Null sender → the organization's default mailbox
   * (no mailbox → allowed: the enqueue refuses it anyway).
   */
  async peek(organizationId: string, senderId: string | null, recipient: string): Promise<{ allowed: boolean; prospect: boolean; sent: number; cap: number }> {
    const row = await this.repository.peek(poolOf(this.uow.dataSource), organizationId, senderId, recipient.trim().toLowerCase(), this.clock.now(), PROSPECT_EMAILS_PER_DAY_DEFAULT);
    const allowed = !row.sender_id || !row.prospect || row.sent < row.cap;
    if (!allowed) this.outcomes.inc({ outcome: 'refused_interactive' });
    return { allowed, prospect: row.prospect, sent: row.sent, cap: row.cap };
  }

  /**
   * Sets the organization's cap (0 stops every prospect send; null goes back to the default).
   * @throws AppError validation_failed
   */
  async setOrganizationCap(organizationId: string, perDay: number | null): Promise<OutboxProspectCapView> {
    if (typeof organizationId !== 'string' || organizationId === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required', { field: 'organization_id' });
    if (perDay !== null && (!Number.isInteger(perDay) || perDay < 0 || perDay > 100_000)) throw new AppError(ErrorCode.ValidationFailed, 'prospect_emails_per_day must be an integer from 0 to 100000, or null', { field: 'prospect_emails_per_day' });
    await this.uow.run((tx) => this.repository.setOrganizationCap(tx, organizationId, perDay, this.clock.now()));
    return { organization_id: organizationId, prospect_emails_per_day: perDay ?? PROSPECT_EMAILS_PER_DAY_DEFAULT, is_default: perDay === null };
  }

  /**
   * The organization's cap in force: its own value, else the default.
   * @throws AppError validation_failed
   */
  async organizationCap(organizationId: string): Promise<OutboxProspectCapView> {
    if (typeof organizationId !== 'string' || organizationId === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required', { field: 'organization_id' });
    const own = await this.repository.organizationCap(poolOf(this.uow.dataSource), organizationId);
    return own !== null ? { organization_id: organizationId, prospect_emails_per_day: own, is_default: false } : { organization_id: organizationId, prospect_emails_per_day: PROSPECT_EMAILS_PER_DAY_DEFAULT, is_default: true };
  }
}
