import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { PlatformModule, WakeSignal } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { AgentsController } from './agents/agents.controller.js';
import { AgentsRepository } from './agents/agents.repository.js';
import { AgentsService } from './agents/agents.service.js';
import { TurnPromisesService } from './agents/turn-promises.service.js';
import { ContactsConsumer } from './contacts/contacts.consumer.js';
import { ContactsRepository } from './contacts/contacts.repository.js';
import { EffectsController } from './effects/effects.controller.js';
import { EffectsRepository } from './effects/effects.repository.js';
import { EffectsService } from './effects/effects.service.js';
import { EnrollmentsController } from './enrollments/enrollments.controller.js';
import { EnrollmentsRepository } from './enrollments/enrollments.repository.js';
import { EnrollmentsService } from './enrollments/enrollments.service.js';
import { FlowVersionCache } from './flows/flow-version-cache.js';
import { FlowsController } from './flows/flows.controller.js';
import { FlowsRepository } from './flows/flows.repository.js';
import { FlowsService } from './flows/flows.service.js';
import type { FollowupsConfig } from './followups.config.js';
import { FollowupsMetrics } from './metrics/followups.metrics.js';
import { FollowupsEntities, FollowupsMigrations } from './migrations/index.js';
import { PromiseFiringService } from './promises/promise-firing.service.js';
import { PromiseLoop } from './promises/promise.loop.js';
import { PromisesController } from './promises/promises.controller.js';
import { PromisesRepository } from './promises/promises.repository.js';
import { PromisesService } from './promises/promises.service.js';
import { CrmTriggersConsumer } from './rules/crm-triggers.consumer.js';
import { RuleCache } from './rules/rule-cache.js';
import { TriggerLoop } from './rules/trigger.loop.js';
import { TriggerRecorder } from './rules/trigger-recorder.js';
import { TriggersRepository } from './rules/triggers.repository.js';
import { TriggersService } from './rules/triggers.service.js';
import { BulkLoop } from './bulk/bulk.loop.js';
import { BulkJobsController } from './bulk/bulk-jobs.controller.js';
import { BulkJobsRepository } from './bulk/bulk-jobs.repository.js';
import { BulkJobsService } from './bulk/bulk-jobs.service.js';
import { RetentionController } from './retention/retention.controller.js';
import { RetentionLoop } from './retention/retention.loop.js';
import { RetentionRepository } from './retention/retention.repository.js';
import { RetentionService } from './retention/retention.service.js';
import { FlowStatsController } from './stats/flow-stats.controller.js';
import { FlowStatsRepository } from './stats/flow-stats.repository.js';
import { FlowStatsService } from './stats/flow-stats.service.js';
import { QueueController } from './queue/queue.controller.js';
import { QueueRepository } from './queue/queue.repository.js';
import { QueueService } from './queue/queue.service.js';
import { InFlightWindow } from './release/in-flight-window.js';
import { NumberChain } from './release/number-chain.js';
import { ReleaseLoop } from './release/release.loop.js';
import { ReleaseRepository } from './release/release.repository.js';
import { ReleaseService } from './release/release.service.js';
import { AiStepLease } from './release/ai-step-lease.js';
import { NodeInterpreter } from './release/node-interpreter.js';
import { SendGate } from './release/send-gate.js';
import { SendStep } from './release/send-step.js';
import { StepOutcomes } from './release/step-outcomes.js';
import { DeliveryStatusesConsumer } from './delivery/delivery-statuses.consumer.js';
import { SendReportsRepository } from './effects/send-reports.repository.js';
import { SendReportsService } from './effects/send-reports.service.js';
import { SendOutcomesConsumer } from './release/send-outcomes.consumer.js';
import { SendOutcomesService } from './release/send-outcomes.service.js';
import { SenderChoiceCache } from './senders/sender-choice.cache.js';
import { SendersConsumer } from './senders/senders.consumer.js';
import { SendersRepository } from './senders/senders.repository.js';
import { SettingsController } from './settings/settings.controller.js';
import { SettingsRepository } from './settings/settings.repository.js';
import { SettingsService } from './settings/settings.service.js';
import { StopPathsConsumer } from './stop-paths/stop-paths.consumer.js';
import { StopPathsRepository } from './stop-paths/stop-paths.repository.js';
import { StopPathsService } from './stop-paths/stop-paths.service.js';

/** What a test may replace (a clock that stands on a DST day). */
export interface FollowupsOverrides {
  clock?: Clock;
}

/**
 * The followups service (DESIGN §4): flows and versions, enrollments, the release loop, the stop
 * paths, settings and the queue, over the shared platform. The features share one module so a
 * test's clock reaches every rule.
 */
@Module({})
export class FollowupsModule {
  static forRoot(config: FollowupsConfig, overrides: FollowupsOverrides = {}): DynamicModule {
    const providers: Provider[] = [
      FollowupsMetrics,
      SettingsRepository,
      SettingsService,
      FlowsRepository,
      FlowsService,
      FlowVersionCache,
      AgentsRepository,
      AgentsService,
      TurnPromisesService,
      ContactsRepository,
      ContactsConsumer,
      SendersRepository,
      SenderChoiceCache,
      NumberChain,
      InFlightWindow,
      SendersConsumer,
      EnrollmentsRepository,
      EnrollmentsService,
      StopPathsRepository,
      StopPathsService,
      StopPathsConsumer,
      WakeSignal,
      ReleaseRepository,
      StepOutcomes,
      AiStepLease,
      SendGate,
      SendStep,
      NodeInterpreter,
      ReleaseService,
      ReleaseLoop,
      SendOutcomesService,
      SendOutcomesConsumer,
      SendReportsRepository,
      SendReportsService,
      DeliveryStatusesConsumer,
      QueueRepository,
      QueueService,
      EffectsRepository,
      EffectsService,
      PromisesRepository,
      PromisesService,
      PromiseFiringService,
      PromiseLoop,
      RuleCache,
      TriggerRecorder,
      TriggersRepository,
      TriggersService,
      TriggerLoop,
      CrmTriggersConsumer,
      BulkJobsRepository,
      BulkJobsService,
      BulkLoop,
      RetentionRepository,
      RetentionService,
      RetentionLoop,
      FlowStatsRepository,
      FlowStatsService,
    ];
    if (overrides.clock) providers.push({ provide: Clock, useValue: overrides.clock });
    return {
      module: FollowupsModule,
      imports: [PlatformModule.forService({ service: 'followups', config, entities: FollowupsEntities, migrations: FollowupsMigrations })],
      controllers: [FlowsController, AgentsController, EnrollmentsController, SettingsController, QueueController, EffectsController, PromisesController, BulkJobsController, RetentionController, FlowStatsController],
      providers,
    };
  }
}
