import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { AgentsController } from '../agents/agents.controller.js';
import { ApprovalCheckController } from './approval-check.controller.js';
import { FollowupBulkJobsController } from './followup-bulk-jobs.controller.js';
import { FollowupEffectsController } from './followup-effects.controller.js';
import { FollowupEnrollmentsController } from './followup-enrollments.controller.js';
import { FollowupFlowsController } from './followup-flows.controller.js';
import { FollowupPromisesController } from './followup-promises.controller.js';

/**
 * The seed-002 follow-up routes (`/ai/followup-flows`, `/ai/followups/*`, `/ai/agents`, `/ai/promises`), forwarded to followups
 * by RPC, and the approval check followups asks the gateway before an approved send.
 */
@Module({ imports: [AccountsModule], controllers: [FollowupFlowsController, FollowupEnrollmentsController, FollowupEffectsController, FollowupPromisesController, FollowupBulkJobsController, ApprovalCheckController, AgentsController] })
export class FollowupsRoutesModule {}
