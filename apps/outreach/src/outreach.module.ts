import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import { CampaignsController } from './campaigns/campaigns.controller.js';
import { CampaignsRepository } from './campaigns/campaigns.repository.js';
import { CampaignsService } from './campaigns/campaigns.service.js';
import { ContextBuilder } from './context/context-builder.js';
import { ThreadReader } from './context/thread-reader.js';
import { DecisionSaver } from './decisions/decision-saver.js';
import { DecisionRunner } from './decisions/decision.runner.js';
import { DecisionsRepository } from './decisions/decisions.repository.js';
import { PeopleDirectory } from './directory/people.directory.js';
import { PersonAddressesConsumer } from './directory/person-addresses.consumer.js';
import { ContactOptedOutConsumer } from './interrupts/contact-opted-out.consumer.js';
import { PersonAddressesRepository } from './directory/person-addresses.repository.js';
import { DraftSaver } from './drafting/draft-saver.js';
import { ExecutionRunner } from './execution/execution.runner.js';
import { ExecutionOutcomesConsumer } from './execution/outcomes.consumer.js';
import { EnrollmentsController } from './enrollments/enrollments.controller.js';
import { EnrollmentsRepository } from './enrollments/enrollments.repository.js';
import { EnrollmentsService } from './enrollments/enrollments.service.js';
import { OutreachEntities, OutreachMigrations } from './migrations/index.js';
import type { OutreachConfig } from './outreach.config.js';
import { ActionsRepository } from './review/actions.repository.js';
import { ReviewController } from './review/review.controller.js';
import { ReviewRepository } from './review/review.repository.js';
import { ReviewService } from './review/review.service.js';
import { RunnerService } from './runners/runner.service.js';
import { RunsConsumer } from './runners/runs.consumer.js';
import { RunsRepository } from './runners/runs.repository.js';
import { TimelineService } from './timeline/timeline.service.js';
import { SweepRepository } from './sweep/sweep.repository.js';
import { DueSweepService } from './sweep/sweep.service.js';
import { AutoReplyResumeService } from './interrupts/auto-reply-resume.service.js';
import { ScheduleMovesRepository } from './interrupts/schedule-moves.repository.js';
import { InterruptsConsumer } from './interrupts/interrupts.consumer.js';
import { InvitationAcceptedConsumer } from './interrupts/invitation-accepted.consumer.js';
import { InterruptsRepository } from './interrupts/interrupts.repository.js';
import { OptOutService } from './interrupts/opt-out.service.js';
import { ReplyInterruptService } from './interrupts/reply-interrupt.service.js';
import { SuppressionsController } from './interrupts/suppressions.controller.js';

/** The outreach service: wires its features onto the shared platform (DESIGN §4, seed 003). */
@Module({})
export class OutreachModule {
  static forRoot(config: OutreachConfig): DynamicModule {
    return {
      module: OutreachModule,
      imports: [PlatformModule.forService({ service: 'outreach', config, entities: OutreachEntities, migrations: OutreachMigrations })],
      controllers: [CampaignsController, EnrollmentsController, ReviewController, SuppressionsController],
      providers: [
        PeopleDirectory,
        PersonAddressesRepository,
        PersonAddressesConsumer,
        ContactOptedOutConsumer,
        ThreadReader,
        CampaignsRepository,
        CampaignsService,
        EnrollmentsRepository,
        EnrollmentsService,
        DecisionsRepository,
        ActionsRepository,
        ReviewRepository,
        ReviewService,
        TimelineService,
        ContextBuilder,
        DecisionSaver,
        DraftSaver,
        DecisionRunner,
        ExecutionRunner,
        RunsRepository,
        RunnerService,
        RunsConsumer,
        ExecutionOutcomesConsumer,
        SweepRepository,
        DueSweepService,
        InterruptsRepository,
        OptOutService,
        AutoReplyResumeService,
        ScheduleMovesRepository,
        ReplyInterruptService,
        InterruptsConsumer,
        InvitationAcceptedConsumer,
      ],
    };
  }
}
