import { Inject, Injectable } from '@nestjs/common';
import { type OutboxPayload, validateEmailPayload } from '@touchpoint/contracts';
import { APP_CONFIG } from '@touchpoint/runtime';
import { signUnsubscribeToken } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import he from 'he';
import { type Classified, classifyProviderFailure, parseRetryAfter, type WireFailure } from '../../classification/classification.js';
import type { OutboxDispatcherConfig } from '../../outbox-dispatcher.config.js';
import { ProspectCapService } from '../../prospect-cap/prospect-cap.service.js';
import { type DispatchEntry, type PreparedSend, type ProviderAdapter, ProviderCallError, type SendAccepted, type SenderCredentials } from '../provider-adapter.js';
import { isSuccess, ProviderHttp } from '../provider-http.js';

/**
 * Provider code we give the prospect-cap refusal (ours; Nylas has no such code): the dispatcher
 * fails the entry with error code `prospect_send_cap_reached`, and nothing was sent.
 */
export const PROSPECT_CAP_REFUSAL_CODE = 90_001;

/** Nylas drops custom headers except on Google grants (seed 003 §4.6), so List-Unsubscribe goes only there. */
const HEADER_FRIENDLY_PROVIDERS = new Set(['google', 'gmail']);

/**
 * Nylas v3 email adapter (seed 003 §4.6): `POST {NYLAS_API_BASE_URL}/v3/grants/{grant}/messages/send`
 * with the application API key, fixtures/nylas/send-message-*.json. The sender's credentials hold
 * `{ api_key, grant_id, provider }`.
 * - The daily prospect cap is claimed before the provider call (one SQL function); a refusal fails
 *   the entry with `prospect_send_cap_reached`, nothing sent.
 * - A reply (`reply_to` = the Nylas id of the answered message) goes in its thread; the subject
 *   ("Re: …") comes from the requester.
 * - Outreach sends get the plain "Unsubscribe: <link>" line after the approved text (outside its
 *   hash), and on Google grants `List-Unsubscribe` + `List-Unsubscribe-Post` (one click).
 * - Tracking is off.
 */
@Injectable()
export class NylasEmailAdapter implements ProviderAdapter {
  readonly channel = 'email' as const;
  private readonly nylas: ProviderHttp;

  constructor(
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
    private readonly cap: ProspectCapService,
    private readonly clock: Clock,
  ) {
    this.nylas = new ProviderHttp({ name: 'Nylas', baseUrl: config.NYLAS_API_BASE_URL, timeoutMs: config.NYLAS_SEND_TIMEOUT_MS });
  }

  validate(payload: unknown): string[] {
    return validateEmailPayload(payload);
  }

  /** Always two-phase: the prospect-cap claim is a database write of its own, kept out of the claim's transaction. */
  needsRemotePreparation(): boolean {
    return true;
  }

  async prepare(entry: DispatchEntry, sender: SenderCredentials): Promise<PreparedSend> {
    const payload = entry.payload as OutboxPayload & { subject?: string; reply_to?: string };
    if (payload.type !== 'text') throw new Error('email supports payload type text only');
    if (!sender.secrets.grant_id || !sender.secrets.api_key) throw new Error('the mailbox has no Nylas grant id or API key');
    const claim = await this.cap.claim(entry, sender.senderId);
    if (claim === 'refused') {
      throw new ProviderCallError({ kind: 'http', httpStatus: 429, providerCode: PROSPECT_CAP_REFUSAL_CODE, retryAfterMs: null }, 'the mailbox reached its daily prospect email cap', null, 'prospect_send_cap_reached');
    }
    let text = payload.body;
    const headers: { name: string; value: string }[] = [];
    if (entry.logContext?.requester === 'outreach') {
      const url = `${this.config.UNSUBSCRIBE_BASE_URL.replace(/\/+$/, '')}/nylas/email/unsubscribe?token=${encodeURIComponent(signUnsubscribeToken({ organization_id: entry.organizationId, email: entry.recipient }, this.config.UNSUBSCRIBE_TOKEN_SECRET))}`;
      text = `${text}\n\nUnsubscribe: ${url}`;
      if (HEADER_FRIENDLY_PROVIDERS.has((sender.secrets.provider ?? '').toLowerCase())) {
        headers.push({ name: 'List-Unsubscribe', value: `<${url}>` }, { name: 'List-Unsubscribe-Post', value: 'List-Unsubscribe=One-Click' });
      }
    }
    const body: Record<string, unknown> = {
      subject: payload.subject ?? '',
      body: textToHtml(text),
      to: [{ email: entry.recipient.trim() }],
      tracking_options: { opens: false, links: false, thread_replies: false },
    };
    if (payload.reply_to) body.reply_to_message_id = payload.reply_to;
    if (headers.length) body.custom_headers = headers;
    return { body, derived: null };
  }

  async send(prepared: PreparedSend, sender: SenderCredentials): Promise<SendAccepted> {
    const answer = await this.nylas.request(`/v3/grants/${encodeURIComponent(sender.secrets.grant_id ?? '')}/messages/send`, { method: 'POST', headers: { authorization: `Bearer ${sender.secrets.api_key}` }, json: prepared.body });
    if (isSuccess(answer)) {
      const id = (answer.body as { data?: { id?: unknown } } | null)?.data?.id;
      // A 2xx we cannot read: Nylas may well have sent it.
      if (typeof id !== 'string') throw new ProviderCallError({ kind: 'network' }, `unreadable ${answer.status} answer from Nylas`, answer.body);
      return { providerMessageId: id, httpStatus: answer.status, body: answer.body };
    }
    const error = (answer.body as { error?: { type?: unknown; message?: unknown } } | null)?.error;
    throw new ProviderCallError(
      { kind: 'http', httpStatus: answer.status, providerCode: null, retryAfterMs: parseRetryAfter(answer.headers.get('retry-after'), this.clock.now()) },
      typeof error?.message === 'string' ? error.message : `Nylas answered ${answer.status}`,
      answer.body,
      typeof error?.type === 'string' ? error.type : String(answer.status),
    );
  }

  /** One message read with its headers (`fields=include_headers`), for the auto-reply rule. */
  async readHeaders(sender: SenderCredentials, messageId: string): Promise<{ headers: { name: string; value: string }[]; subject: string | null }> {
    const answer = await this.nylas.request(`/v3/grants/${encodeURIComponent(sender.secrets.grant_id ?? '')}/messages/${encodeURIComponent(messageId)}?fields=include_headers`, { method: 'GET', headers: { authorization: `Bearer ${sender.secrets.api_key}` } });
    if (answer.status !== 200) throw new ProviderCallError({ kind: 'http', httpStatus: answer.status, providerCode: null, retryAfterMs: null }, `Nylas answered ${answer.status}`, answer.body);
    const data = (answer.body as { data?: { headers?: unknown; subject?: unknown } } | null)?.data;
    return { headers: Array.isArray(data?.headers) ? (data.headers as { name: string; value: string }[]) : [], subject: typeof data?.subject === 'string' ? data.subject : null };
  }

  /**
   * Nylas failures: the cap refusal → permanent (nothing sent, the requester holds it); 429 →
   * rate limited (Retry-After floor); 5xx → transient; any other 4xx → permanent; timeout and a
   * broken connection → ambiguous (never resent blindly); a local fault → local_execution.
   */
  classify(failure: WireFailure): Classified {
    return classifyProviderFailure(failure, [PROSPECT_CAP_REFUSAL_CODE]);
  }
}

/** HTML of a plain-text body: escaped (the `he` library), line breaks kept (the approved text goes out as written). */
export function textToHtml(text: string): string {
  return he.escape(text).replace(/\r\n?/g, '\n').replace(/\n/g, '<br>');
}
