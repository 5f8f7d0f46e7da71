import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import {
  NOTIFICATION_CHANNELS,
  type NotificationChannel,
  type NotificationCreateData,
  type NotificationCreatedData,
  type NotificationView,
  MessagingEvents,
  type MessagingPage,
  type NotificationTemplateData,
  type NotificationTemplateView,
  type NotificationVariables,
  type NotificationWhatsAppTemplate,
  notificationVariableProblems,
  validateWhatsAppPayload,
} from '@touchpoint/contracts';
import { decodeCursor, encodeCursor, pageSize, requireId, requireString, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { canonicalJson, codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { ContactsService } from '../contacts/contacts.service.js';
import { SendService } from '../sending/send.service.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { MessagesRepository } from '../messages/messages.repository.js';
import { NotificationsRepository, type NotificationRow, toNotificationView, toTemplateView } from './notifications.repository.js';
import { chooseWhatsAppContent, whatsAppTemplateContent } from './service-window.js';

/** Longest notification body, characters. */
const MAX_BODY = 4096;

/** Fills `{{name}}` placeholders; a placeholder with no value is an error, never sent raw. */
export function renderTemplate(text: string, variables: NotificationVariables = {}): string {
  const missing: string[] = [];
  const out = text.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (_, name: string) => {
    if (variables[name] === undefined || variables[name] === null) {
      missing.push(name);
      return '';
    }
    return String(variables[name]);
  });
  if (missing.length) throw new AppError(ErrorCode.ValidationFailed, `missing template variables: ${[...new Set(missing)].join(', ')}`, { field: 'variables', missing });
  return out;
}

/**
 * Notifications (seed 004 "Scenario 1"): one delivery per channel, each `pending`
 * until the dispatcher's outcome settles it (`sent` / `failed`); WhatsApp deliveries go out
 * through the shared send path with key `nd:{deliveryId}` in the contact's conversation, reusing
 * or opening its active instance, and the message is linked to the notification.
 */
@Injectable()
export class NotificationsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: NotificationsRepository,
    private readonly contacts: ContactsService,
    private readonly sends: SendService,
    private readonly messages: MessagesRepository,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @throws AppError validation_failed, not_found (contact, template), idempotency_conflict (the key created a different notification) */
  async create(data: NotificationCreateData): Promise<NotificationView> {
    requireId(data?.contact_id, 'contact');
    const channels = [...new Set(data.channels ?? [])];
    if (channels.length === 0 || channels.some((c) => !NOTIFICATION_CHANNELS.includes(c))) {
      throw new AppError(ErrorCode.ValidationFailed, `channels must be a non-empty list of ${NOTIFICATION_CHANNELS.join(', ')}`, { field: 'channels' });
    }
    if (data.priority && !['low', 'normal', 'high'].includes(data.priority)) throw new AppError(ErrorCode.ValidationFailed, 'priority must be low, normal or high', { field: 'priority' });
    const badVariables = notificationVariableProblems(data.variables);
    if (badVariables.length) throw new AppError(ErrorCode.ValidationFailed, badVariables.join('; '), { field: badVariables[0]!.split(' ')[0], problems: badVariables });
    const requestHash = data.idempotency_key ? requestHashOf(data, channels) : null;
    const notificationId = await this.uow.run(async (tx) => {
      if (data.idempotency_key) {
        const existing = await this.repository.findByIdempotencyKey(tx, data.organization_id, data.idempotency_key);
        if (existing) return sameRequest(existing, requestHash);
      }
      const contact = await this.contacts.mustFind(tx, data.organization_id, data.contact_id);
      if (contact.erased_at) throw new AppError(ErrorCode.NotFound, 'contact not found');
      let title = data.title ?? null;
      let body = data.body ?? null;
      let whatsappTemplate: WhatsAppTemplateContent | null = null;
      if (data.template_key) {
        const template = await this.repository.findTemplate(tx, data.organization_id, data.template_key);
        if (!template) throw new AppError(ErrorCode.NotFound, 'notification template not found', { template_key: data.template_key });
        title = template.title !== null ? renderTemplate(template.title, data.variables) : title;
        body = renderTemplate(template.body, data.variables);
        // Filled whether or not the window is open, so the same request never answers differently by the hour.
        if (template.whatsapp_template && channels.includes('whatsapp')) whatsappTemplate = checkedTemplateContent(template.whatsapp_template, data.variables);
      }
      if (!body || body.trim() === '' || codePointLength(body) > MAX_BODY) throw new AppError(ErrorCode.ValidationFailed, `body (or a template) is required, at most ${MAX_BODY} characters`, { field: 'body' });
      const now = this.clock.now();
      const notification = await this.repository.insert(
        tx,
        {
          organization_id: data.organization_id,
          contact_id: contact.id,
          template_key: data.template_key ?? null,
          title,
          body,
          priority: data.priority ?? 'normal',
          data: data.data ?? {},
          idempotency_key: data.idempotency_key ?? null,
          request_hash: requestHash,
        },
        now,
      );
      if (!notification) {
        const winner = await this.repository.findByIdempotencyKey(tx, data.organization_id, data.idempotency_key!);
        return sameRequest(winner!, requestHash);
      }
      const disabled = await this.repository.disabledChannels(tx, data.organization_id, contact.id);
      for (const channel of channels) await this.deliver(tx, notification, channel, disabled.has(channel), now, whatsappTemplate, contact.opted_out_at !== null);
      const created: NotificationCreatedData = { notification_id: notification.id, contact_id: contact.id, channels };
      await tx.publish({ event_id: `messaging.notification.created:${notification.id}`, type: MessagingEvents.NotificationCreated, organization_id: data.organization_id, data: created });
      await this.stream.append(tx, data.organization_id, MessagingEvents.NotificationCreated, { ...created, title, body });
      return notification.id;
    });
    return this.get(data.organization_id, notificationId);
  }

  /**
   * One channel's delivery: skipped by preference, in-app at once, the others through the send
   * path. A WhatsApp delivery sends the text inside the contact's 24-hour window and the approved
   * template outside it; with no template it fails `whatsapp_template_required` here, at creation.
   * @throws AppError invalid_payload (the dispatcher's rules refuse what would be sent), validation_failed
   */
  private async deliver(tx: Tx, notification: NotificationRow, channel: NotificationChannel, disabled: boolean, now: Date, whatsappTemplate: WhatsAppTemplateContent | null, optedOut: boolean): Promise<void> {
    if (disabled) {
      await this.repository.insertDelivery(tx, notification.organization_id, notification.id, channel, 'skipped', now);
      return;
    }
    if (channel === 'in_app') {
      // The stored notification is the in-app item; the feed shows it.
      await this.repository.insertDelivery(tx, notification.organization_id, notification.id, channel, 'sent', now);
      return;
    }
    const delivery = await this.repository.insertDelivery(tx, notification.organization_id, notification.id, channel, 'pending', now);
    let template: WhatsAppTemplateContent | undefined;
    // An opted-out contact is refused by the send path with `opted_out`, whatever the window says.
    if (channel === 'whatsapp' && !optedOut) {
      const lastInbound = await this.messages.lastInboundAt(tx, notification.organization_id, notification.contact_id, 'whatsapp');
      const choice = chooseWhatsAppContent(lastInbound, now, whatsappTemplate !== null);
      if (choice === 'template_required') {
        // Meta would refuse the text (131047): fail now, visibly, rather than queue a send that cannot go.
        await this.repository.settleDelivery(tx, delivery.id, 'failed', ErrorCode.WhatsAppTemplateRequired, now);
        this.logger.warn(
          { event: 'messaging.notification_undeliverable', organization_id: notification.organization_id, notification_id: notification.id, channel, code: ErrorCode.WhatsAppTemplateRequired, last_inbound_at: lastInbound?.toISOString() ?? null },
          'the 24-hour window is closed and the notification names no WhatsApp template',
        );
        return;
      }
      if (choice === 'template') template = whatsappTemplate!;
    }
    try {
      const { message } = await this.sends.sendInTx(tx, {
        organization_id: notification.organization_id,
        idempotency_key: `nd:${delivery.id}`,
        channel,
        contact_id: notification.contact_id,
        sender_type: 'notification',
        requester: 'messaging',
        ...(template ? { template } : { text: channel === 'email' || !notification.title ? notification.body : `${notification.title}\n\n${notification.body}` }),
        subject: channel === 'email' ? (notification.title ?? undefined) : undefined,
        notification_delivery_id: delivery.id,
        context: { notification_id: notification.id, delivery_id: delivery.id },
      });
      await this.messages.setNotification(tx, message.id, notification.id);
      await this.repository.setDeliveryMessage(tx, delivery.id, message.id);
      if (channel === 'whatsapp') await this.repository.linkInstance(tx, notification.id, message.instance_id);
      if (message.status === 'failed') await this.repository.settleDelivery(tx, delivery.id, 'failed', message.error_code ?? 'failed', now);
    } catch (err) {
      // Only "the contact has no address for this channel" fails this delivery alone; anything else
      // about the content (a payload the dispatcher would refuse) refuses the whole request.
      if (!(err instanceof AppError) || err.code !== ErrorCode.ValidationFailed || (err.details as { field?: string } | undefined)?.field !== 'contact_id') throw err;
      await this.repository.settleDelivery(tx, delivery.id, 'failed', 'no_address', now);
      this.logger.warn({ event: 'messaging.notification_undeliverable', organization_id: notification.organization_id, notification_id: notification.id, channel, err: err.message }, 'notification channel undeliverable');
    }
  }

  /** @throws AppError not_found */
  async get(organizationId: string, notificationId: string): Promise<NotificationView> {
    requireId(notificationId, 'notification');
    return this.uow.run(async (tx) => {
      const row = await this.repository.findById(tx, organizationId, notificationId);
      if (!row) throw new AppError(ErrorCode.NotFound, 'notification not found');
      return toNotificationView(row, await this.repository.deliveries(tx, [row.id]));
    });
  }

  async list(organizationId: string, q: { contact_id?: string; cursor?: string; limit?: number }): Promise<MessagingPage<NotificationView>> {
    const limit = pageSize(q.limit);
    const filters = { contact_id: q.contact_id };
    const after = q.cursor ? decodeCursor(q.cursor, filters, { acceptUnversioned: true }) : null;
    if (q.contact_id) requireId(q.contact_id, 'contact');
    return this.uow.run(async (tx) => {
      const rows = await this.repository.list(tx, organizationId, { contact_id: q.contact_id, after }, limit + 1);
      const page = rows.slice(0, limit);
      const deliveries = await this.repository.deliveries(
        tx,
        page.map((r) => r.id),
      );
      const last = page[page.length - 1];
      return { items: page.map((r) => toNotificationView(r, deliveries)), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
    });
  }

  /**
   * Creates or replaces a template. Its WhatsApp template is checked by the dispatcher's own rules
   * (with a stand-in value per parameter), so a name or language Meta would refuse fails here.
   * @throws AppError validation_failed, invalid_payload (`details.errors`)
   */
  async upsertTemplate(organizationId: string, data: Omit<NotificationTemplateData, 'organization_id'>): Promise<NotificationTemplateView> {
    requireString(data?.key, 'key');
    requireString(data?.body, 'body');
    if (!/^[a-z0-9_.-]{1,64}$/.test(data.key)) throw new AppError(ErrorCode.ValidationFailed, 'key must be 1-64 of a-z 0-9 _ . -', { field: 'key' });
    const whatsapp = data.whatsapp_template ? checkWhatsAppTemplate(data.whatsapp_template) : null;
    const row = await this.uow.run((tx) => this.repository.upsertTemplate(tx, organizationId, data.key, data.title ?? null, data.body, whatsapp, this.clock.now()));
    return toTemplateView(row);
  }

  async listTemplates(organizationId: string): Promise<{ items: NotificationTemplateView[] }> {
    const rows = await this.uow.run((tx) => this.repository.listTemplates(tx, organizationId));
    return { items: rows.map(toTemplateView) };
  }

  async setPreference(organizationId: string, data: { contact_id: string; channel: string; enabled: boolean }) {
    if (!NOTIFICATION_CHANNELS.includes(data?.channel as NotificationChannel)) throw new AppError(ErrorCode.ValidationFailed, `channel must be one of ${NOTIFICATION_CHANNELS.join(', ')}`, { field: 'channel' });
    if (typeof data.enabled !== 'boolean') throw new AppError(ErrorCode.ValidationFailed, 'enabled must be true or false', { field: 'enabled' });
    return this.uow.run(async (tx) => {
      await this.contacts.mustFind(tx, organizationId, data.contact_id);
      await this.repository.setPreference(tx, organizationId, data.contact_id, data.channel, data.enabled, this.clock.now());
      return { items: await this.repository.listPreferences(tx, organizationId, data.contact_id) };
    });
  }

  async listPreferences(organizationId: string, contactId: string) {
    return this.uow.run(async (tx) => {
      await this.contacts.mustFind(tx, organizationId, contactId);
      return { items: await this.repository.listPreferences(tx, organizationId, contactId) };
    });
  }
}

type WhatsAppTemplateContent = ReturnType<typeof whatsAppTemplateContent>;

/**
 * A notification's WhatsApp template filled with its variables and run through the dispatcher's
 * payload rules now, window open or not, so a variable Meta would refuse as a parameter (a newline,
 * a tab, more than 4 spaces in a row, empty) refuses the request the same way at any hour.
 * @throws AppError validation_failed (a missing variable), invalid_payload (`details.errors`)
 */
function checkedTemplateContent(template: NotificationWhatsAppTemplate, variables: NotificationVariables | undefined): WhatsAppTemplateContent {
  const content = whatsAppTemplateContent(template, variables);
  const problems = validateWhatsAppPayload({ type: 'template', ...content }, '');
  if (problems.length) {
    throw new AppError(ErrorCode.InvalidPayload, `the WhatsApp template filled from variables ${template.parameters.join(', ')} would be refused: ${problems.join('; ')}`, { field: 'variables', parameters: template.parameters, errors: problems });
  }
  return content;
}

/**
 * A template's WhatsApp template, shape-checked and run through the dispatcher's payload rules
 * with a stand-in value for each parameter.
 * @throws AppError validation_failed, invalid_payload
 */
function checkWhatsAppTemplate(t: NonNullable<NotificationTemplateData['whatsapp_template']>): NotificationWhatsAppTemplate {
  if (typeof t !== 'object' || typeof t.name !== 'string' || typeof t.language !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'whatsapp_template needs name and language', { field: 'whatsapp_template' });
  const parameters = t.parameters ?? [];
  if (!Array.isArray(parameters) || parameters.some((p) => typeof p !== 'string' || !/^[\w.-]{1,64}$/.test(p))) {
    throw new AppError(ErrorCode.ValidationFailed, 'whatsapp_template.parameters must be a list of variable names', { field: 'whatsapp_template.parameters' });
  }
  const checked: NotificationWhatsAppTemplate = { name: t.name, language: t.language, parameters };
  const sample = whatsAppTemplateContent(checked, Object.fromEntries(parameters.map((p) => [p, 'x'])));
  const problems = validateWhatsAppPayload({ type: 'template', ...sample }, '');
  if (problems.length) throw new AppError(ErrorCode.InvalidPayload, `whatsapp_template is not valid: ${problems.join('; ')}`, { field: 'whatsapp_template', errors: problems });
  return checked;
}

/**
 * The fingerprint of a create request: what the caller asked for (contact, channels, template and
 * variables or title and body, priority, data), key order and channel order aside.
 */
function requestHashOf(data: NotificationCreateData, channels: string[]): string {
  const request = {
    contact_id: data.contact_id,
    channels: [...channels].sort(),
    template_key: data.template_key ?? null,
    variables: data.variables ?? null,
    title: data.title ?? null,
    body: data.body ?? null,
    priority: data.priority ?? 'normal',
    data: data.data ?? {},
  };
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

/**
 * The notification a reused idempotency key answers: the same one for the same request (a retry),
 * 409 for another (rows from before request fingerprints answer every retry).
 * @throws AppError idempotency_conflict
 */
function sameRequest(existing: NotificationRow, requestHash: string | null): string {
  if (existing.request_hash && requestHash && existing.request_hash !== requestHash) {
    throw new AppError(ErrorCode.IdempotencyConflict, 'this idempotency_key was already used for a different notification', { field: 'idempotency_key', notification_id: existing.id });
  }
  return existing.id;
}
