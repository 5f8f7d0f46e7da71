import type { MessagingSendContent, NotificationVariables, NotificationWhatsAppTemplate } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { serviceWindowLeftMs } from '@touchpoint/time';

/**
 * How long before the window closes a template is preferred to the text, ms: a send waits in the
 * dispatcher's queue (per-pair pacing of 6.5 s, retries) before it reaches Meta, and a text that
 * arrives a minute late is refused.
 */
export const SERVICE_WINDOW_MARGIN_MS = 10 * 60_000;

/** How a WhatsApp notification delivery goes out: its text, the approved template, or not at all. */
export type WhatsAppDeliveryChoice = 'text' | 'template' | 'template_required';

/**
 * Chooses the content of a WhatsApp notification delivery from the contact's last inbound message
 * (UTC; null: never wrote) and `now`: the text inside the window; the template outside it, and in
 * the last `SERVICE_WINDOW_MARGIN_MS` when there is one; `template_required` outside the window
 * without one (the delivery fails `whatsapp_template_required` at creation). Pure.
 */
export function chooseWhatsAppContent(lastInboundAt: Date | null, now: Date, hasTemplate: boolean): WhatsAppDeliveryChoice {
  const left = serviceWindowLeftMs(lastInboundAt, now);
  if (left > SERVICE_WINDOW_MARGIN_MS) return 'text';
  if (hasTemplate) return 'template';
  return left > 0 ? 'text' : 'template_required';
}

/**
 * The send content of a notification's WhatsApp template: the template's name and language, and
 * one body component whose text parameters are the named variables' values in order (shape of
 * fixtures/meta/send-template-request.json).
 * @throws AppError validation_failed (`details.missing`) when a named variable has no value
 */
export function whatsAppTemplateContent(template: NotificationWhatsAppTemplate, variables: NotificationVariables = {}): NonNullable<MessagingSendContent['template']> {
  const missing = template.parameters.filter((name) => variables[name] === undefined || variables[name] === null);
  if (missing.length) throw new AppError(ErrorCode.ValidationFailed, `missing template variables: ${[...new Set(missing)].join(', ')}`, { field: 'variables', missing });
  const parameters = template.parameters.map((name) => ({ type: 'text', text: String(variables[name]) }));
  return { name: template.name, language: template.language, ...(parameters.length ? { components: [{ type: 'body', parameters }] } : {}) };
}
