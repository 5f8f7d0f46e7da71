import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type CampaignCreateData, type CampaignRef, type CampaignStatus, OutreachRpc } from '@touchpoint/contracts';
import { OwnedReferences, OnRpc } from '@touchpoint/runtime';
import { CampaignsService } from './campaigns.service.js';

/** RPC edge of campaigns and the organization-wide stop. */
@Controller()
export class CampaignsController {
  constructor(
    private readonly campaigns: CampaignsService,
    private readonly references: OwnedReferences,
  ) {}

  /** The mailbox and LinkedIn senders must be the caller's, of their channel (404 otherwise, as for an unknown id). */
  @OnRpc(OutreachRpc.CampaignCreate)
  async create(@Payload() data: CampaignCreateData) {
    await this.references.require(data?.organization_id, [
      { field: 'email_sender_id', kind: 'sender', id: data?.email_sender_id, channel: 'email' },
      { field: 'linkedin_sender_id', kind: 'sender', id: data?.linkedin_sender_id, channel: 'linkedin' },
    ]);
    return this.campaigns.create(data);
  }

  @OnRpc(OutreachRpc.CampaignList)
  async list(@Payload() data: { organization_id: string; status?: CampaignStatus }) {
    return { items: await this.campaigns.list(data.organization_id, data.status) };
  }

  @OnRpc(OutreachRpc.CampaignGet)
  get(@Payload() data: CampaignRef) {
    return this.campaigns.get(data.organization_id, data.campaign_id);
  }

  @OnRpc(OutreachRpc.CampaignPause)
  pause(@Payload() data: CampaignRef) {
    return this.campaigns.pause(data.organization_id, data.campaign_id);
  }

  @OnRpc(OutreachRpc.CampaignResume)
  resume(@Payload() data: CampaignRef) {
    return this.campaigns.resume(data.organization_id, data.campaign_id);
  }

  @OnRpc(OutreachRpc.CampaignArchive)
  archive(@Payload() data: CampaignRef) {
    return this.campaigns.archive(data.organization_id, data.campaign_id);
  }

  @OnRpc(OutreachRpc.CampaignDelete)
  delete(@Payload() data: CampaignRef) {
    return this.campaigns.delete(data.organization_id, data.campaign_id);
  }

  @OnRpc(OutreachRpc.SettingsGet)
  settings(@Payload() data: { organization_id: string }) {
    return this.campaigns.settings(data.organization_id);
  }

  @OnRpc(OutreachRpc.Stop)
  stop(@Payload() data: { organization_id: string }) {
    return this.campaigns.setStopped(data.organization_id, true);
  }

  @OnRpc(OutreachRpc.Resume)
  resumeOrganization(@Payload() data: { organization_id: string }) {
    return this.campaigns.setStopped(data.organization_id, false);
  }
}
