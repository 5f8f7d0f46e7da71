import { IsInt, Max, Min, ServiceConfig } from '@touchpoint/config';

/** Environment of the abuse service; see libs/config for the shared variables. */
export class AbuseConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3105;

  /** How often expired throttles and blocks are ended and announced, ms (0 disables the loop). */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  ABUSE_EXPIRY_INTERVAL_MS = 30_000;
}
