import { Inject, Injectable } from '@nestjs/common';
import { isUuid, requireString } from '@touchpoint/database';
import { CAMPAIGN_STATUSES, type CampaignCreateData, type CampaignStatus, type CampaignView, OUTREACH_CHANNELS, type OutreachSettingsView } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { type CampaignRow, CampaignsRepository, toCampaignView } from './campaigns.repository.js';

/** Longest campaign name and goal, characters (ours). */
export const CAMPAIGN_NAME_MAX = 200;
export const CAMPAIGN_GOAL_MAX = 2000;
/** Bounds of max_touches and the follow-up gap (ours; a wait is clamped to 30 days by seed 003 §4.3). */
export const MAX_TOUCHES_LIMIT = 20;
export const FOLLOWUP_DAYS_LIMIT = 90;

/**
 * Campaigns and the organization-wide stop (seed 003 §5 campaign statuses, §6). Pause and resume
 * write the campaign row only: the runners and the sweep read its status. Archive is final and
 * ends every live enrollment with `campaign_archived`.
 */
@Injectable()
export class CampaignsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly campaigns: CampaignsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly actions: ActionsRepository,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @throws AppError validation_failed naming the field */
  async create(data: CampaignCreateData): Promise<CampaignView> {
    const input = validateCampaign(data);
    const row = await this.uow.run((tx) => this.campaigns.insert(tx, { ...input, created_at: this.clock.now() }));
    this.logger.info({ event: 'outreach.campaign_created', organization_id: row.organization_id, campaign_id: row.id }, 'campaign created');
    return toCampaignView(row);
  }

  async list(organizationId: string, status?: CampaignStatus): Promise<CampaignView[]> {
    if (status !== undefined && !CAMPAIGN_STATUSES.includes(status)) throw new AppError(ErrorCode.ValidationFailed, `status must be one of ${CAMPAIGN_STATUSES.join(', ')}`, { field: 'status' });
    return (await this.uow.run((tx) => this.campaigns.list(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS), status))).map(toCampaignView);
  }

  /** @throws AppError not_found */
  async get(organizationId: string, campaignId: string): Promise<CampaignView> {
    return toCampaignView(await this.uow.run((tx) => this.mustFind(tx, organizationId, campaignId)));
  }

  /** active → paused; pausing a paused campaign answers it as it is. @throws not_found, campaign_archived */
  pause(organizationId: string, campaignId: string): Promise<CampaignView> {
    return this.move(organizationId, campaignId, ['active'], 'paused');
  }

  /** paused → active. @throws not_found, campaign_archived */
  resume(organizationId: string, campaignId: string): Promise<CampaignView> {
    return this.move(organizationId, campaignId, ['paused'], 'active');
  }

  /**
   * active|paused → archived (final): every live enrollment ends `campaign_archived`, and its
   * pending and approved actions are invalidated, in the same transaction.
   * @throws AppError not_found
   */
  async archive(organizationId: string, campaignId: string): Promise<CampaignView> {
    const now = this.clock.now();
    const row = await this.uow.run(async (tx) => {
      const campaign = await this.mustFind(tx, organizationId, campaignId, true);
      if (campaign.status === 'archived') return campaign;
      const moved = (await this.campaigns.setStatus(tx, organizationId, campaignId, ['active', 'paused'], 'archived', now))!;
      const ended = await this.enrollments.endLiveOfCampaign(tx, campaignId, 'campaign_archived', now);
      await this.actions.invalidateOfCampaign(tx, campaignId, 'campaign_archived', now);
      this.logger.info({ event: 'outreach.campaign_archived', organization_id: organizationId, campaign_id: campaignId, ended: ended.length }, 'campaign archived');
      return moved;
    });
    return this.get(row.organization_id, row.id);
  }

  /** Deletes a campaign that never had an enrollment. @throws not_found, campaign_has_enrollments */
  async delete(organizationId: string, campaignId: string): Promise<{ deleted: true; campaign_id: string }> {
    await this.uow.run(async (tx) => {
      await this.mustFind(tx, organizationId, campaignId, true);
      if (!(await this.campaigns.deleteIfNeverEnrolled(tx, organizationId, campaignId))) {
        throw new AppError(ErrorCode.CampaignHasEnrollments, 'a campaign that had an enrollment cannot be deleted; archive it');
      }
    });
    return { deleted: true, campaign_id: campaignId };
  }

  settings(organizationId: string): Promise<OutreachSettingsView> {
    return this.uow.run((tx) => this.campaigns.settings(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS)));
  }

  /** Organization-wide stop (seed 003 §6): no decision, no send and no sweep while it is set. */
  async setStopped(organizationId: string, stopped: boolean): Promise<OutreachSettingsView> {
    const view = await this.uow.run((tx) => this.campaigns.setStopped(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS), stopped, this.clock.now()));
    this.logger.info({ event: stopped ? 'outreach.stopped' : 'outreach.resumed', organization_id: organizationId }, stopped ? 'outreach stopped' : 'outreach resumed');
    return view;
  }

  private async move(organizationId: string, campaignId: string, from: CampaignStatus[], to: CampaignStatus): Promise<CampaignView> {
    await this.uow.run(async (tx) => {
      const campaign = await this.mustFind(tx, organizationId, campaignId, true);
      if (campaign.status === 'archived') throw new AppError(ErrorCode.CampaignArchived, 'the campaign is archived');
      if (from.includes(campaign.status)) await this.campaigns.setStatus(tx, organizationId, campaignId, from, to, this.clock.now());
    });
    return this.get(organizationId, campaignId);
  }

  private async mustFind(tx: Parameters<CampaignsRepository['find']>[0], organizationId: string, campaignId: string, lock = false): Promise<CampaignRow> {
    const row = isUuid(campaignId) ? await this.campaigns.find(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS), campaignId, lock) : null;
    if (!row) throw new AppError(ErrorCode.NotFound, 'campaign not found');
    return row;
  }
}

/** The longest reference (organization, member id) an outreach request may carry, code points. */
export const REFERENCE_MAX_CHARS = 200;

/** Checks a campaign's fields. @throws AppError validation_failed naming the field */
export function validateCampaign(data: CampaignCreateData): Omit<CampaignRow, 'id' | 'status' | 'created_at' | 'updated_at' | 'paused_at' | 'archived_at'> {
  const fail = (field: string, message: string) => new AppError(ErrorCode.ValidationFailed, message, { field });
  requireString(data?.organization_id, 'organization_id', REFERENCE_MAX_CHARS);
  const name = typeof data.name === 'string' ? data.name.trim() : '';
  if (!name || codePointLength(name) > CAMPAIGN_NAME_MAX) throw fail('name', `name must be 1 to ${CAMPAIGN_NAME_MAX} characters`);
  const goal = typeof data.goal === 'string' ? data.goal.trim() : '';
  if (!goal || codePointLength(goal) > CAMPAIGN_GOAL_MAX) throw fail('goal', `goal must be 1 to ${CAMPAIGN_GOAL_MAX} characters`);
  const channels = Array.isArray(data.allowed_channels) ? [...new Set(data.allowed_channels)] : [];
  if (channels.length === 0 || channels.some((c) => !OUTREACH_CHANNELS.includes(c))) throw fail('allowed_channels', `allowed_channels must be a non-empty list of ${OUTREACH_CHANNELS.join(', ')}`);
  const int = (v: unknown, field: string, min: number, max: number) => {
    if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) throw fail(field, `${field} must be an integer from ${min} to ${max}`);
    return v as number;
  };
  const maxTouches = int(data.max_touches, 'max_touches', 1, MAX_TOUCHES_LIMIT);
  const minDays = int(data.followup_min_days, 'followup_min_days', 1, FOLLOWUP_DAYS_LIMIT);
  const maxDays = int(data.followup_max_days, 'followup_max_days', minDays, FOLLOWUP_DAYS_LIMIT);
  const sender = (v: unknown, field: string) => {
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string' || v.length > 200) throw fail(field, `${field} must be a sender id`);
    return v;
  };
  return {
    organization_id: data.organization_id,
    name,
    goal,
    allowed_channels: channels,
    max_touches: maxTouches,
    followup_min_days: minDays,
    followup_max_days: maxDays,
    email_sender_id: sender(data.email_sender_id, 'email_sender_id'),
    linkedin_sender_id: sender(data.linkedin_sender_id, 'linkedin_sender_id'),
  };
}
