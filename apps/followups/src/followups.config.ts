import { IsInt, Max, Min, ServiceConfig } from '@touchpoint/config';

/** Environment of the followups service; see libs/config for the shared variables. */
export class FollowupsConfig extends ServiceConfig {
  @IsInt() @Min(0) @Max(65535)
  override PORT = 3101;
}
