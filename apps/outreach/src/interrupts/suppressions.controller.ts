import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type EmailBounceData, type EmailSuppressionResult, type EmailUnsubscribeData, OutreachSuppressionRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { OnRpc } from '@touchpoint/runtime';
import { OptOutService } from './opt-out.service.js';

/** Most recipients one bounce names (ours: a bounced message has few). */
const MAX_BOUNCE_RECIPIENTS = 100;

const isEmail = (v: unknown): v is string => typeof v === 'string' && v.length <= 320 && /^[^\s@]+@[^\s@]+$/.test(v.trim());

/** The unsubscribe link and the bounce, forwarded by the gateway's Nylas routes (seed 003 §4.7). */
@Controller()
export class SuppressionsController {
  constructor(private readonly optOut: OptOutService) {}

  /**
   * Answers once the address is suppressed here and on the dispatcher's list and its enrollments
   * ended (the link's promise: no email after the click).
   * @throws AppError validation_failed (no organization or a malformed address), service_unavailable
   */
  @OnRpc(OutreachSuppressionRpc.EmailUnsubscribe)
  unsubscribe(@Payload() data: EmailUnsubscribeData): Promise<EmailSuppressionResult> {
    const org = requireOrg(data?.organization_id);
    if (!isEmail(data.email)) throw new AppError(ErrorCode.ValidationFailed, 'email must be an address', { field: 'email' });
    const email = data.email.trim().toLowerCase();
    return this.optOut.applyNow({ organization_id: org, source: 'unsubscribe', cause_id: email, values: [{ channel: 'email', value: email }], person_ids: [] });
  }

  /** @throws AppError validation_failed, service_unavailable */
  @OnRpc(OutreachSuppressionRpc.EmailBounce)
  bounce(@Payload() data: EmailBounceData): Promise<EmailSuppressionResult> {
    const org = requireOrg(data?.organization_id);
    const emails = Array.isArray(data.emails) ? data.emails.filter(isEmail).map((e) => e.trim().toLowerCase()) : [];
    if (emails.length === 0 || emails.length > MAX_BOUNCE_RECIPIENTS) throw new AppError(ErrorCode.ValidationFailed, `emails must hold 1 to ${MAX_BOUNCE_RECIPIENTS} addresses`, { field: 'emails' });
    const cause = data.provider_message_id ?? emails.join(',');
    return this.optOut.applyNow({ organization_id: org, source: 'bounce', cause_id: cause, values: emails.map((value) => ({ channel: 'email' as const, value })), person_ids: [] });
  }
}

function requireOrg(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required', { field: 'organization_id' });
  return value;
}
