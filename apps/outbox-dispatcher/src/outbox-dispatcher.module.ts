import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { AmbiguousController } from './ambiguous/ambiguous.controller.js';
import { AmbiguousRepository } from './ambiguous/ambiguous.repository.js';
import { ResolutionService } from './ambiguous/resolution.service.js';
import { AttemptsRepository } from './drain/attempts.repository.js';
import { DispatchService } from './drain/dispatch.service.js';
import { DrainService } from './drain/drain.service.js';
import { OutboxRepository } from './drain/outbox.repository.js';
import { PairLeaseRepository } from './drain/pair-lease.repository.js';
import { EnqueueConsumer } from './enqueue/enqueue.consumer.js';
import { EnqueueController } from './enqueue/enqueue.controller.js';
import { EnqueueService } from './enqueue/enqueue.service.js';
import { OutboxMetrics } from './metrics/outbox.metrics.js';
import { OutboxDispatcherEntities, OutboxDispatcherMigrations } from './migrations/index.js';
import type { OutboxDispatcherConfig } from './outbox-dispatcher.config.js';
import { PROVIDER_ADAPTERS, type ProviderAdapter } from './providers/provider-adapter.js';
import { ProviderRegistry } from './providers/provider-registry.js';
import { WhatsAppAdapter } from './providers/whatsapp/whatsapp.adapter.js';
import { NylasEmailAdapter } from './providers/email/nylas.adapter.js';
import { ProviderAccountsController } from './email/provider-accounts.controller.js';
import { ProviderAccountsService } from './email/provider-accounts.service.js';
import { LinkedinRelationsRepository } from './linkedin/linkedin-relations.repository.js';
import { LinkedinStateController } from './linkedin/linkedin-state.controller.js';
import { UnipileLinkedinAdapter } from './providers/linkedin/unipile.adapter.js';
import { CorrespondentsConsumer } from './prospect-cap/correspondents.consumer.js';
import { ProspectCapRepository } from './prospect-cap/prospect-cap.repository.js';
import { ProspectCapService } from './prospect-cap/prospect-cap.service.js';
import { SendersController } from './senders/senders.controller.js';
import { SendersRepository } from './senders/senders.repository.js';
import { SenderOwnershipService } from './senders/sender-ownership.service.js';
import { SendersService } from './senders/senders.service.js';
import { WebhookErrorsService } from './senders/webhook-errors.service.js';
import { ReplyHoldConsumer } from './reply-hold/reply-hold.consumer.js';
import { ReplyHoldRepository } from './reply-hold/reply-hold.repository.js';
import { SuppressionsConsumer } from './suppressions/suppressions.consumer.js';
import { SuppressionsRepository } from './suppressions/suppressions.repository.js';
import { SuppressionsService } from './suppressions/suppressions.service.js';
import { LeaseRecoveryService } from './sweep/lease-recovery.service.js';
import { SweepRepository } from './sweep/sweep.repository.js';
import { SweepService } from './sweep/sweep.service.js';

/** What a test may replace when it starts the service. */
export interface OutboxDispatcherOverrides {
  /** A clock the test moves by hand (pacing, backoff, leases, retention all read it). */
  clock?: Clock;
}

/**
 * The outbox-dispatcher service (DESIGN §4, seed 004 "Outbound WhatsApp outbox & dispatcher"):
 * senders, enqueue, the do-not-contact list, the paced drain with its provider adapters, ambiguous
 * resolution and the sweep.
 */
@Module({})
export class OutboxDispatcherModule {
  static forRoot(config: OutboxDispatcherConfig, overrides: OutboxDispatcherOverrides = {}): DynamicModule {
    const providers: Provider[] = [
      SendersRepository,
      SendersService,
      WebhookErrorsService,
      SenderOwnershipService,
      OutboxRepository,
      PairLeaseRepository,
      AttemptsRepository,
      AmbiguousRepository,
      SweepRepository,
      OutboxMetrics,
      WhatsAppAdapter,
      NylasEmailAdapter,
      UnipileLinkedinAdapter,
      ProspectCapRepository,
      ProspectCapService,
      LinkedinRelationsRepository,
      CorrespondentsConsumer,
      ReplyHoldRepository,
      ReplyHoldConsumer,
      ProviderAccountsService,
      {
        provide: PROVIDER_ADAPTERS,
        useFactory: (whatsapp: WhatsAppAdapter, email: NylasEmailAdapter, linkedin: UnipileLinkedinAdapter): ProviderAdapter[] => [whatsapp, email, linkedin],
        inject: [WhatsAppAdapter, NylasEmailAdapter, UnipileLinkedinAdapter],
      },
      ProviderRegistry,
      ResolutionService,
      DispatchService,
      DrainService,
      EnqueueService,
      EnqueueConsumer,
      SuppressionsRepository,
      SuppressionsService,
      SuppressionsConsumer,
      LeaseRecoveryService,
      SweepService,
    ];
    if (overrides.clock) providers.unshift({ provide: Clock, useValue: overrides.clock });
    return {
      module: OutboxDispatcherModule,
      imports: [PlatformModule.forService({ service: 'outbox-dispatcher', config, entities: OutboxDispatcherEntities, migrations: OutboxDispatcherMigrations })],
      controllers: [SendersController, EnqueueController, AmbiguousController, ProviderAccountsController, LinkedinStateController],
      providers,
    };
  }
}
