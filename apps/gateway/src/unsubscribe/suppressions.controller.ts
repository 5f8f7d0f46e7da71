import { Body, Controller, Delete, HttpCode } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsIn, IsString, Length } from 'class-validator';
import { OutboxAccountRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';

/** Body of `DELETE /suppressions`: the do-not-contact row to remove. */
export class RemoveSuppressionDto {
  @ApiProperty({ enum: ['whatsapp', 'email', 'linkedin'] })
  @IsIn(['whatsapp', 'email', 'linkedin'])
  channel!: 'whatsapp' | 'email' | 'linkedin';

  @ApiProperty({ example: 'ana@example.com', description: 'The phone number, email address or LinkedIn member id / profile URL' })
  @IsString()
  @Length(1, 320)
  value!: string;
}

export class SuppressionRemovedDto {
  @ApiProperty({ description: 'false when the value was not on the list', example: true }) removed!: boolean;
  @ApiProperty({ enum: ['whatsapp', 'email', 'linkedin'], example: 'email' }) channel!: string;
  @ApiProperty({ description: 'The value as the list keys it (an email lower-cased, a phone as digits)', example: 'ana@example.com' }) value!: string;
}

/**
 * The organization's do-not-contact list (seed 003 §5 `contact_suppressions`): code never clears a
 * row; a person with the admin scope removes one, for example when someone asks to be contacted
 * again. Forwarded to the outbox-dispatcher, which owns the list.
 */
@ApiTags('suppressions')
@Controller('suppressions')
@RequireKey({ scopes: [Scope.Admin] })
export class SuppressionsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Delete()
  @HttpCode(200)
  @ApiOperation({ summary: 'Remove an address from the do-not-contact list (admin)' })
  @ApiOkResponse({ type: SuppressionRemovedDto })
  @ApiErrorResponses(400, 422, 503)
  remove(@CurrentCaller() caller: Caller, @Body() body: RemoveSuppressionDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.SuppressionRemove, body);
  }
}
