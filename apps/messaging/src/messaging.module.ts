import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { ContactsController } from './contacts/contacts.controller.js';
import { ContactsRepository } from './contacts/contacts.repository.js';
import { ContactsService } from './contacts/contacts.service.js';
import { CrmEventsController } from './crm/crm-events.controller.js';
import { CrmEventsRepository } from './crm/crm-events.repository.js';
import { CrmEventsService } from './crm/crm-events.service.js';
import { ConversationsController } from './conversations/conversations.controller.js';
import { ConversationsRepository } from './conversations/conversations.repository.js';
import { ConversationsService } from './conversations/conversations.service.js';
import { InstanceSweepService } from './conversations/instance-sweep.service.js';
import { InstancesService } from './conversations/instances.service.js';
import { InboundController } from './inbound/inbound.controller.js';
import { InboundReceiptsRepository } from './inbound/inbound-receipts.repository.js';
import { InboundBatchRepository } from './inbound/inbound-batch.repository.js';
import { InboundReceiptsWorker } from './inbound/inbound-receipts.worker.js';
import { InboundMetrics } from './inbound/inbound.metrics.js';
import { InboundOptOutService } from './inbound/inbound-opt-out.service.js';
import { InboundReceiptsService } from './inbound/inbound-receipts.service.js';
import { InboundRecordService } from './inbound/inbound-record.service.js';
import { InboundService } from './inbound/inbound.service.js';
import { MessagesRepository } from './messages/messages.repository.js';
import type { MessagingConfig } from './messaging.config.js';
import { MessagingEntities, MessagingMigrations } from './migrations/index.js';
import { NotificationsController } from './notifications/notifications.controller.js';
import { NotificationsRepository } from './notifications/notifications.repository.js';
import { NotificationsService } from './notifications/notifications.service.js';
import { OutcomeSweepRepository } from './reconciliation/outcome-sweep.repository.js';
import { OutcomeSweepService } from './reconciliation/outcome-sweep.service.js';
import { AbuseGuardService } from './restrictions/abuse-guard.service.js';
import { RestrictionsConsumer } from './restrictions/restrictions.consumer.js';
import { RestrictionsRepository } from './restrictions/restrictions.repository.js';
import { SendersRepository } from './senders/senders.repository.js';
import { SendersService } from './senders/senders.service.js';
import { OutcomesConsumer } from './sending/outcomes.consumer.js';
import { OutcomesService } from './sending/outcomes.service.js';
import { SendConsumer, SendController } from './sending/send.controller.js';
import { SendRepository } from './sending/send.repository.js';
import { SendService } from './sending/send.service.js';
import { StreamController } from './stream/stream.controller.js';
import { FollowupsFeedConsumer } from './stream/followups-feed.consumer.js';
import { StreamRepository } from './stream/stream.repository.js';

/** Options a test passes to stand the service at a chosen instant. */
export interface MessagingModuleOptions {
  clock?: Clock;
}

/** The messaging service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class MessagingModule {
  static forRoot(config: MessagingConfig, options: MessagingModuleOptions = {}): DynamicModule {
    const providers: Provider[] = [
      StreamRepository,
      FollowupsFeedConsumer,
      ContactsRepository,
      ContactsService,
      CrmEventsRepository,
      CrmEventsService,
      ConversationsRepository,
      InstancesService,
      ConversationsService,
      InstanceSweepService,
      MessagesRepository,
      RestrictionsRepository,
      RestrictionsConsumer,
      AbuseGuardService,
      SendersRepository,
      SendersService,
      NotificationsRepository,
      NotificationsService,
      SendRepository,
      SendService,
      SendConsumer,
      OutcomesService,
      OutcomesConsumer,
      OutcomeSweepRepository,
      OutcomeSweepService,
      InboundMetrics,
      InboundOptOutService,
      InboundService,
      InboundReceiptsService,
      InboundRecordService,
      InboundReceiptsRepository,
      InboundBatchRepository,
      InboundReceiptsWorker,
    ];
    if (options.clock) providers.push({ provide: Clock, useValue: options.clock });
    return {
      module: MessagingModule,
      imports: [PlatformModule.forService({ service: 'messaging', config, entities: MessagingEntities, migrations: MessagingMigrations })],
      controllers: [ContactsController, CrmEventsController, ConversationsController, InboundController, SendController, NotificationsController, StreamController],
      providers,
    };
  }
}
