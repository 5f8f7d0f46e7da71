import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import { CampaignsController } from './campaigns/campaigns.controller.js';
import { CampaignsRepository } from './campaigns/campaigns.repository.js';
import { CampaignsService } from './campaigns/campaigns.service.js';
import { ThreadReader } from './context/thread-reader.js';
import { DecisionsRepository } from './decisions/decisions.repository.js';
import { PeopleDirectory } from './directory/people.directory.js';
import { EnrollmentsController } from './enrollments/enrollments.controller.js';
import { EnrollmentsRepository } from './enrollments/enrollments.repository.js';
import { EnrollmentsService } from './enrollments/enrollments.service.js';
import { OutreachEntities, OutreachMigrations } from './migrations/index.js';
import type { OutreachConfig } from './outreach.config.js';
import { ActionsRepository } from './review/actions.repository.js';
import { ReviewController } from './review/review.controller.js';
import { ReviewRepository } from './review/review.repository.js';
import { ReviewService } from './review/review.service.js';
import { TimelineService } from './timeline/timeline.service.js';

/** The outreach service: wires its features onto the shared platform (DESIGN §4, seed 003). */
@Module({})
export class OutreachModule {
  static forRoot(config: OutreachConfig): DynamicModule {
    return {
      module: OutreachModule,
      imports: [PlatformModule.forService({ service: 'outreach', config, entities: OutreachEntities, migrations: OutreachMigrations })],
      controllers: [CampaignsController, EnrollmentsController, ReviewController],
      providers: [
        PeopleDirectory,
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
      ],
    };
  }
}
