import { Injectable } from '@nestjs/common';
import { WakeSignal } from '@touchpoint/runtime';

/**
 * Wakes idle release workers of this process early (an enrollment became due now: enrolled,
 * advanced, woken by a reply, or a wake-up message arrived). A hint only: workers poll anyway.
 */
@Injectable()
export class ReleaseSignal extends WakeSignal {}
