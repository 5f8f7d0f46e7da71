import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, IsUUID, Max, MaxLength, Min, ValidateBy, ValidateNested } from 'class-validator';
import { CONTACT_KINDS, LONGEST_TEXT_MAX, MESSAGING_CHANNELS, NOTIFICATION_CHANNELS, type NotificationVariables, notificationVariableProblems } from '@touchpoint/contracts';
import { MaxCodePoints } from '../../http/validation.js';

/** Longest idempotency key a REST client may give, in characters (code points); messaging takes up to 200 from the bus. */
const IDEMPOTENCY_KEY_MAX = 150;

/** Messaging's own rule for notification variables (`notificationVariableProblems`), as a class-validator check. */
const AreNotificationVariables = () =>
  ValidateBy({
    name: 'areNotificationVariables',
    validator: {
      validate: (value: unknown) => notificationVariableProblems(value).length === 0,
      defaultMessage: (args) => notificationVariableProblems(args?.value).join('; '),
    },
  });

/** A cursor page query. */
export class PageQuery {
  @ApiPropertyOptional({ description: 'next_cursor of the previous page' }) @IsOptional() @IsString() @MaxLength(500) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit?: number;
}

export class ContactIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') contact_id!: string;
}

export class ContactTagParams extends ContactIdParams {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) tag!: string;
}

export class ContactPreferenceParams extends ContactIdParams {
  @ApiProperty({ enum: NOTIFICATION_CHANNELS }) @IsIn(NOTIFICATION_CHANNELS) channel!: string;
}

/** Body of `POST /contacts`. Phones in any notation; stored E.164. */
export class CreateContactDto {
  @ApiPropertyOptional({ enum: CONTACT_KINDS, default: 'crm' }) @IsOptional() @IsIn(CONTACT_KINDS) kind?: 'crm' | 'prospect';
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @IsString() @MaxLength(200) name?: string;
  @ApiPropertyOptional({ example: '+55 11 98765-4321' }) @IsOptional() @IsString() @MaxLength(40) phone?: string;
  @ApiPropertyOptional({ example: 'ana@example.com' }) @IsOptional() @IsString() @MaxLength(320) email?: string;
  @ApiPropertyOptional({ example: 'https://www.linkedin.com/in/ana-example' }) @IsOptional() @IsString() @MaxLength(300) linkedin_url?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) linkedin_provider_id?: string;
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @ArrayMaxSize(100) @IsString({ each: true }) tags?: string[];
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) @IsOptional() @IsObject() custom_fields?: Record<string, unknown>;
  @ApiPropertyOptional({ example: 'America/Sao_Paulo' }) @IsOptional() @IsString() @MaxLength(64) time_zone?: string;
  @ApiPropertyOptional({ example: 'premium', description: 'rate-limit tier' }) @IsOptional() @IsString() @MaxLength(32) user_type?: string;
}

/** Body of `PATCH /contacts/{contact_id}`: any writable field but tags (use the tag routes). */
export class UpdateContactDto {
  @ApiPropertyOptional({ enum: CONTACT_KINDS }) @IsOptional() @IsIn(CONTACT_KINDS) kind?: 'crm' | 'prospect';
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) name?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(40) phone?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(320) email?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(300) linkedin_url?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) linkedin_provider_id?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) @IsOptional() @IsObject() custom_fields?: Record<string, unknown>;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(64) time_zone?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(32) user_type?: string;
}

export class ListContactsQuery extends PageQuery {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(64) tag?: string;
  @ApiPropertyOptional({ enum: CONTACT_KINDS }) @IsOptional() @IsIn(CONTACT_KINDS) kind?: 'crm' | 'prospect';
}

export class TagsDto {
  @ApiProperty({ type: [String], example: ['vip'] }) @IsArray() @ArrayMinSize(1) @ArrayMaxSize(100) @IsString({ each: true }) tags!: string[];
}

export class ConversationIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') conversation_id!: string;
}

export class ListConversationsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ['open', 'resolved'] }) @IsOptional() @IsIn(['open', 'resolved']) status?: 'open' | 'resolved';
  @ApiPropertyOptional({ enum: MESSAGING_CHANNELS }) @IsOptional() @IsIn(MESSAGING_CHANNELS) channel?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') contact_id?: string;
}

class TemplateContentDto {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(512) name!: string;
  @ApiProperty({ example: 'pt_BR' }) @IsString() @IsNotEmpty() @MaxLength(16) language!: string;
  @ApiPropertyOptional({ type: 'array', items: { type: 'object' } }) @IsOptional() @IsArray() components?: Record<string, unknown>[];
}

class MediaContentDto {
  @ApiProperty({ enum: ['image', 'document', 'audio', 'video'] }) @IsIn(['image', 'document', 'audio', 'video']) media_type!: 'image' | 'document' | 'audio' | 'video';
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(2000) link?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) media_id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(1024) caption?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(240) filename?: string;
}

/** Body of `POST /conversations/{id}/messages`: an operator writes (one of text, template, media). */
export class OperatorSendDto {
  @ApiProperty({ description: `Your key for this message: a retried request with the same key sends once. At most ${IDEMPOTENCY_KEY_MAX} characters (code points)`, maxLength: IDEMPOTENCY_KEY_MAX })
  @IsString()
  @IsNotEmpty()
  @MaxCodePoints(IDEMPOTENCY_KEY_MAX)
  idempotency_key!: string;

  // The conversation's channel is known to messaging, not here: it refuses a text over that channel's limit (400 validation_failed).
  @ApiPropertyOptional({ maxLength: LONGEST_TEXT_MAX, description: "At most the conversation's channel's limit, in characters (code points): WhatsApp 4096, email 100000, LinkedIn 8000, others 4096" })
  @IsOptional()
  @IsString()
  @MaxLength(LONGEST_TEXT_MAX)
  text?: string;
  @ApiPropertyOptional({ type: TemplateContentDto }) @IsOptional() @ValidateNested() @Type(() => TemplateContentDto) template?: TemplateContentDto;
  @ApiPropertyOptional({ type: MediaContentDto }) @IsOptional() @ValidateNested() @Type(() => MediaContentDto) media?: MediaContentDto;
  @ApiPropertyOptional({ description: 'email only' }) @IsOptional() @IsString() @MaxLength(998) subject?: string;
}

/** Body of `POST /notifications`. */
export class CreateNotificationDto {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') contact_id!: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(64) template_key?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) title?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(4096) body?: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
    example: { name: 'Ana', amount: 120 },
    description: 'values of the template placeholders: strings, numbers or booleans (objects, arrays and null are refused)',
  })
  @IsOptional()
  @IsObject()
  @AreNotificationVariables()
  variables?: NotificationVariables;
  @ApiProperty({ enum: NOTIFICATION_CHANNELS, isArray: true }) @IsArray() @ArrayMinSize(1) @IsIn(NOTIFICATION_CHANNELS, { each: true }) channels!: ('whatsapp' | 'email' | 'sms' | 'in_app')[];
  @ApiPropertyOptional({ enum: ['low', 'normal', 'high'] }) @IsOptional() @IsIn(['low', 'normal', 'high']) priority?: 'low' | 'normal' | 'high';
  @ApiPropertyOptional({ maxLength: IDEMPOTENCY_KEY_MAX }) @IsOptional() @IsString() @MaxCodePoints(IDEMPOTENCY_KEY_MAX) idempotency_key?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) @IsOptional() @IsObject() data?: Record<string, unknown>;
}

export class NotificationIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') notification_id!: string;
}

export class ListNotificationsQuery extends PageQuery {
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') contact_id?: string;
}

/** The approved WhatsApp template a notification template sends outside the 24-hour window. */
export class NotificationWhatsAppTemplateDto {
  @ApiProperty({ example: 'payment_received', description: "the template's name at Meta (lowercase letters, digits, _)" }) @IsString() @IsNotEmpty() @MaxLength(512) name!: string;
  @ApiProperty({ example: 'pt_BR', description: "the approved translation's language code" }) @IsString() @IsNotEmpty() @MaxLength(16) language!: string;
  @ApiPropertyOptional({ type: [String], example: ['name', 'amount'], description: 'notification variables that fill the body parameters {{1}}, {{2}}, … in this order' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  parameters?: string[];
}

/** Body of `PUT /notification-templates/{key}`: `{{name}}` placeholders are filled from `variables`. */
export class NotificationTemplateBodyDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) title?: string;
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(4096) body!: string;
  @ApiPropertyOptional({
    type: NotificationWhatsAppTemplateDto,
    nullable: true,
    description: "sent instead of the text when the contact's 24-hour WhatsApp window is closed; without one, such a WhatsApp delivery fails whatsapp_template_required",
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => NotificationWhatsAppTemplateDto)
  whatsapp_template?: NotificationWhatsAppTemplateDto | null;
}

export class TemplateKeyParams {
  @ApiProperty({ example: 'payment_received' }) @IsString() @IsNotEmpty() @MaxLength(64) key!: string;
}

export class PreferenceDto {
  @ApiProperty() @IsBoolean() enabled!: boolean;
}

export class StreamQuery {
  @ApiPropertyOptional({ description: 'comma-separated types or prefixes ending in "." (messaging.message.)' }) @IsOptional() @IsString() @MaxLength(1000) types?: string;
  @ApiPropertyOptional({ description: 'resume after this id (same as the Last-Event-ID header)' }) @IsOptional() @IsString() @MaxLength(30) last_event_id?: string;
}
