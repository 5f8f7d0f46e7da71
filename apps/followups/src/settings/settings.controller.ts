import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type DataEnvelope, FollowupsRpc, type FollowupSettingsView, type SettingsEntitlementData, type SettingsUpdateData } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { check } from '../input-checks/input-checks.js';
import { SettingsService } from './settings.service.js';

/** RPC edge of organization follow-up settings. */
@Controller()
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @OnRpc(FollowupsRpc.SettingsGet)
  async get(@Payload() input: { organization_id: string }): Promise<DataEnvelope<FollowupSettingsView>> {
    check(input).uuid('organization_id').done();
    return { data: await this.settings.get(input.organization_id) };
  }

  @OnRpc(FollowupsRpc.SettingsUpdate)
  async update(@Payload() input: SettingsUpdateData): Promise<DataEnvelope<FollowupSettingsView>> {
    return { data: await this.settings.update(input) };
  }

  @OnRpc(FollowupsRpc.SettingsSetEntitlement)
  async setEntitlement(@Payload() input: SettingsEntitlementData): Promise<DataEnvelope<FollowupSettingsView>> {
    return { data: await this.settings.setEntitlement(input) };
  }
}
