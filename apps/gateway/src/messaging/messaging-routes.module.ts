import { Module } from '@nestjs/common';
import { ContactsController } from './contacts.controller.js';
import { ConversationsController } from './conversations.controller.js';
import { EventsStreamController } from './events-stream.controller.js';
import { NotificationsController } from './notifications.controller.js';

/** The messaging routes of the public API: contacts, conversations, notifications, the event stream. */
@Module({ controllers: [ContactsController, ConversationsController, NotificationsController, EventsStreamController] })
export class MessagingRoutesModule {}
