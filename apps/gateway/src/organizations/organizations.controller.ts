import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequireKey } from '../auth/auth.decorators.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { OrganizationDto, OrganizationParams } from './dto/organization.dto.js';
import { OrganizationsService } from './organizations.service.js';

/** The caller's own organization. Tenant-checked by the guard: another id answers 404. */
@ApiTags('organizations')
@Controller('organizations')
export class OrganizationsController {
  constructor(private readonly organizations: OrganizationsService) {}

  @Get(':customer_id')
  @RequireKey()
  @ApiOperation({ summary: "The caller's organization" })
  @ApiOkResponse({ type: OrganizationDto })
  @ApiErrorResponses(404)
  get(@Param() params: OrganizationParams): Promise<OrganizationDto> {
    return this.organizations.get(params.customer_id);
  }
}
