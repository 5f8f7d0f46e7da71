import { Module } from '@nestjs/common';
import { FollowupEnrollmentsController } from './followup-enrollments.controller.js';
import { FollowupFlowsController } from './followup-flows.controller.js';

/** The seed-002 follow-up routes (`/ai/followup-flows`, `/ai/followups/*`), forwarded to followups by RPC. */
@Module({ controllers: [FollowupFlowsController, FollowupEnrollmentsController] })
export class FollowupsRoutesModule {}
