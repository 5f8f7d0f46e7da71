import { ApiProperty } from '@nestjs/swagger';
import { CONTACT_KINDS, MESSAGE_STATUSES, MESSAGING_CHANNELS, NOTIFICATION_CHANNELS } from '@touchpoint/contracts';
import { itemsPage } from '../../http/openapi-envelopes.js';

/**
 * Answers of the messaging routes as the document shows them (libs/contracts `ContactView`,
 * `ConversationView`, `MessageView`, `NotificationView`, `MessagingSendResult`). Times are ISO-8601 UTC.
 */

const ORG = '6f1c2a4e-8b7d-4c3e-9a1f-2d5e8b7c4a10';
const CONTACT = '0b6d7f3e-2c1a-4e8b-9f5d-7a3c2e1b4d60';
const CONVERSATION = '3e9a1c5b-7d2f-4b8e-a6c4-1f0e9d8c7b21';
const INSTANCE = '9c2e4a6b-1d3f-4e5a-8b7c-6d5e4f3a2b19';
const MESSAGE = 'a4b3c2d1-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const AT = '2026-03-02T14:05:00.000Z';

/** A contact (`ContactView`). */
export class ContactDto {
  @ApiProperty({ format: 'uuid', example: CONTACT }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) organization_id!: string;
  @ApiProperty({ enum: CONTACT_KINDS, example: 'crm' }) kind!: 'crm' | 'prospect';
  @ApiProperty({ type: String, nullable: true, example: 'Ana Souza' }) name!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'E.164', example: '+5511987654321' }) phone!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'ana@example.com' }) email!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'https://www.linkedin.com/in/ana-example' }) linkedin_url!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) linkedin_provider_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: "A prospect's link to the CRM contact they are; null otherwise", example: null }) linked_contact_id!: string | null;
  @ApiProperty({ type: [String], example: ['vip'] }) tags!: string[];
  @ApiProperty({ type: 'object', additionalProperties: true, example: { plan: 'gold' } }) custom_fields!: Record<string, unknown>;
  @ApiProperty({ type: String, nullable: true, description: 'IANA time zone', example: 'America/Sao_Paulo' }) time_zone!: string | null;
  @ApiProperty({ description: 'rate-limit tier', example: 'all' }) user_type!: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) opted_out_at!: string | null;
  @ApiProperty({ description: 'personal fields and message bodies wiped', example: false }) erased!: boolean;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

export const ContactPageDto = itemsPage('ContactPageDto', ContactDto);

/** One channel's notification preference. */
export class PreferenceItemDto {
  @ApiProperty({ enum: NOTIFICATION_CHANNELS, example: 'email' }) channel!: string;
  @ApiProperty({ example: false }) enabled!: boolean;
}

/** A contact's preferences: channels without a row are on. */
export const PreferenceListDto = itemsPage('PreferenceListDto', PreferenceItemDto, { cursor: false });

/** A conversation (`ConversationView`). */
export class ConversationDto {
  @ApiProperty({ format: 'uuid', example: CONVERSATION }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) organization_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ enum: MESSAGING_CHANNELS, example: 'whatsapp' }) channel!: string;
  @ApiProperty({ enum: ['open', 'resolved'], example: 'open' }) status!: 'open' | 'resolved';
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: INSTANCE }) active_instance_id!: string | null;
  @ApiProperty({ type: Number, nullable: true, example: 4 }) active_instance_message_count!: number | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: AT }) last_message_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) resolved_at!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
}

export const ConversationPageDto = itemsPage('ConversationPageDto', ConversationDto);

/** A media attachment of a message. */
export class AttachmentDto {
  @ApiProperty({ format: 'uuid', example: '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a' }) id!: string;
  @ApiProperty({ example: 'image' }) media_type!: string;
  @ApiProperty({ type: String, nullable: true, example: 'image/jpeg' }) mime_type!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'https://files.example.com/receipt.jpg' }) url!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) provider_media_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'Receipt' }) caption!: string | null;
}

/** A message of a conversation (`MessageView`). */
export class MessageDto {
  @ApiProperty({ format: 'uuid', example: MESSAGE }) id!: string;
  @ApiProperty({ format: 'uuid', example: CONVERSATION }) conversation_id!: string;
  @ApiProperty({ format: 'uuid', example: INSTANCE }) instance_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ enum: MESSAGING_CHANNELS, example: 'whatsapp' }) channel!: string;
  @ApiProperty({ enum: ['inbound', 'outbound'], example: 'outbound' }) direction!: 'inbound' | 'outbound';
  @ApiProperty({ enum: ['contact', 'operator', 'system', 'ai', 'followup', 'outreach', 'notification'], example: 'operator' }) sender_type!: string;
  @ApiProperty({ type: String, nullable: true, description: 'the member, agent or flow that wrote it', example: null }) sender_id!: string | null;
  @ApiProperty({ example: 'text' }) message_type!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Olá Ana, seu pedido saiu para entrega.' }) body!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'email only', example: null }) subject!: string | null;
  @ApiProperty({ enum: MESSAGE_STATUSES, example: 'delivered' }) status!: string;
  @ApiProperty({ type: String, nullable: true, description: "the provider's id (a WhatsApp wamid)", example: 'wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjA' }) external_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) thread_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) notification_id!: string | null;
  @ApiProperty({ type: [AttachmentDto], example: [] }) attachments!: AttachmentDto[];
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: AT }) sent_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: AT }) delivered_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) read_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) failed_at!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) error_code!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "the provider's sub-code of a failure (Meta's error_subcode)", example: null }) error_subcode!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "the provider's details of a failure (Meta's error_data.details)", example: null }) error_details!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'the outbox entry while the outcome is unknown (`/outbox/ambiguous`)', example: null }) outbox_entry_id!: string | null;
}

export const MessagePageDto = itemsPage('MessagePageDto', MessageDto);

/** What an operator send queued (`MessagingSendResult`). */
export class SendResultDto {
  @ApiProperty({ format: 'uuid', example: MESSAGE }) message_id!: string;
  @ApiProperty({ format: 'uuid', example: CONVERSATION }) conversation_id!: string;
  @ApiProperty({ format: 'uuid', example: INSTANCE }) instance_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ enum: MESSAGE_STATUSES, example: 'queued' }) status!: string;
  @ApiProperty({ description: 'false when the idempotency_key was seen before (nothing new was queued)', example: true }) created!: boolean;
}

/** One channel of a notification. */
export class NotificationDeliveryDto {
  @ApiProperty({ format: 'uuid', example: '7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928' }) id!: string;
  @ApiProperty({ enum: NOTIFICATION_CHANNELS, example: 'whatsapp' }) channel!: string;
  @ApiProperty({ enum: ['pending', 'sent', 'failed', 'skipped'], example: 'pending' }) status!: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) message_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) error_code!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

/** A notification with its deliveries (`NotificationView`). */
export class NotificationDto {
  @ApiProperty({ format: 'uuid', example: '1a2b3c4d-5e6f-4a1b-9c2d-3e4f5a6b7c8d' }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) organization_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'payment_received' }) template_key!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'Pagamento recebido' }) title!: string | null;
  @ApiProperty({ example: 'Recebemos seu pagamento de R$ 120,00.' }) body!: string;
  @ApiProperty({ enum: ['low', 'normal', 'high'], example: 'normal' }) priority!: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) conversation_instance_id!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, example: {} }) data!: Record<string, unknown>;
  @ApiProperty({ type: [NotificationDeliveryDto] }) deliveries!: NotificationDeliveryDto[];
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
}

export const NotificationPageDto = itemsPage('NotificationPageDto', NotificationDto);

/** A notification template. */
export class NotificationTemplateDto {
  @ApiProperty({ example: 'payment_received' }) key!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Pagamento recebido' }) title!: string | null;
  @ApiProperty({ description: "`{{name}}` placeholders are filled from the notification's variables", example: 'Recebemos seu pagamento de {{amount}}.' }) body!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

export const NotificationTemplateListDto = itemsPage('NotificationTemplateListDto', NotificationTemplateDto, { cursor: false });
