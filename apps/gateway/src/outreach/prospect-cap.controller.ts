import { Body, Controller, Get, HttpCode, Put } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { OutboxAccountRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';

/** Largest per-day cap an organization may set (ours; the dispatcher refuses more too). */
const PROSPECT_CAP_MAX = 100_000;

/** Body of `PUT /agentic/outreach/settings/prospect-cap`. */
export class ProspectCapBody {
  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: 0,
    maximum: PROSPECT_CAP_MAX,
    example: 10,
    description: 'Prospect emails one mailbox may send per UTC day; 0 stops every prospect send; null goes back to the default (30). Required: give null to clear.',
  })
  @ValidateIf((o: ProspectCapBody) => o.prospect_emails_per_day !== null)
  @IsInt()
  @Min(0)
  @Max(PROSPECT_CAP_MAX)
  prospect_emails_per_day!: number | null;
}

export class ProspectCapDto {
  @ApiProperty({ example: 'org_3f9c2a' }) organization_id!: string;
  @ApiProperty({ type: 'integer', example: 10, description: 'The cap in force: prospect emails per mailbox and UTC day; 0 stops every prospect send' }) prospect_emails_per_day!: number;
  @ApiProperty({ example: false, description: 'True when the organization set no value and the default (30) applies' }) is_default!: boolean;
}

/**
 * The organization's daily prospect cap, part of its outreach settings (seed 003 §6: one mailbox
 * sends at most 30 prospect emails per UTC day unless the organization overrides it; 0 stops every
 * prospect send). The outbox-dispatcher owns and enforces it at the send; these routes read and
 * set it. Changing it needs the admin scope.
 */
@ApiTags('outreach')
@Controller('agentic/outreach/settings/prospect-cap')
export class ProspectCapController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get()
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: "The organization's daily prospect email cap per mailbox (UTC day)" })
  @ApiOkResponse({ type: ProspectCapDto })
  @ApiErrorResponses(401, 403, 503)
  get(@CurrentCaller() caller: Caller) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.ProspectCapGet, {});
  }

  @Put()
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.Admin] })
  @ApiOperation({ summary: "Sets the organization's daily prospect email cap per mailbox (admin); 0 stops every prospect send, null restores the default" })
  @ApiOkResponse({ type: ProspectCapDto })
  @ApiErrorResponses(400, 401, 403, 503)
  set(@CurrentCaller() caller: Caller, @Body() body: ProspectCapBody) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.ProspectCapSet, { prospect_emails_per_day: body.prospect_emails_per_day });
  }
}
