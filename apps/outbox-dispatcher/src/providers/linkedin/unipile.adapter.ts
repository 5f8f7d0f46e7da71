import { Inject, Injectable } from '@nestjs/common';
import { type OutboxPayload, validateLinkedinPayload } from '@touchpoint/contracts';
import { APP_CONFIG } from '@touchpoint/runtime';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { type Classified, classifyProviderFailure, parseRetryAfter, type WireFailure } from '../../classification/classification.js';
import type { OutboxDispatcherConfig } from '../../outbox-dispatcher.config.js';
import { type DispatchEntry, type PreparedSend, type ProviderAdapter, ProviderCallError, type SendAccepted, type SenderCredentials } from '../provider-adapter.js';
import { isSuccess, ProviderHttp } from '../provider-http.js';

/** Provider codes we give Unipile's refusals (ours): both fail the entry with nothing sent. */
export const ALREADY_CONNECTED_CODE = 90_101;
export const CONNECTION_HELD_CODE = 90_102;
/** LinkedIn's invitation note limit, characters. */
export const INVITE_NOTE_MAX = 300;

/**
 * Unipile error types (RFC 7807 `type`, developer.unipile.com "Error responses") that mean the
 * invitation is pointless: the person is already a relation. Seed 003 §5: `already_connected` →
 * the action is invalidated and the next decision can message instead.
 */
const ALREADY_CONNECTED_TYPES = [/already_connected/, /already_in_network/, /already_a_relation/];
/**
 * Types that mean "not now": a pending or recent invitation, LinkedIn's invitation throttle.
 * Seed 003 §5: `connection_held` → nothing was sent; the action goes back to approved for later.
 */
const CONNECTION_HELD_TYPES = [/cannot_resend_yet/, /already_invited_recently/, /invitation_pending/, /limit_exceeded/];

/**
 * Unipile (API v1) LinkedIn adapter (seed 003 §4.6). The sender's credentials hold
 * `{ api_key, account_id }`; the recipient is the person's LinkedIn provider id.
 * - `log_context.linkedin_action = 'invite'`: `POST /api/v1/users/invite` (JSON: provider_id,
 *   account_id, message = the note); the invitation id is the provider id of the send.
 * - otherwise a chat message: `POST /api/v1/chats` (multipart form: account_id, text,
 *   attendees_ids), which starts or reuses the 1:1 chat; the message id is the provider id.
 * Refusals map to `already_connected` and `connection_held`.
 */
@Injectable()
export class UnipileLinkedinAdapter implements ProviderAdapter {
  readonly channel = 'linkedin' as const;
  private readonly unipile: ProviderHttp;

  constructor(
    @Inject(APP_CONFIG) config: OutboxDispatcherConfig,
    private readonly clock: Clock,
  ) {
    this.unipile = new ProviderHttp({ name: 'Unipile', baseUrl: config.UNIPILE_API_BASE_URL, timeoutMs: config.UNIPILE_SEND_TIMEOUT_MS });
  }

  validate(payload: unknown): string[] {
    return validateLinkedinPayload(payload);
  }

  /** A recipient given as a profile URL needs one Unipile read first: the invitation goes by member id. */
  needsRemotePreparation(entry: DispatchEntry): boolean {
    return slugOf(entry.recipient) !== null && typeof entry.prepared?.provider_id !== 'string';
  }

  async prepare(entry: DispatchEntry, sender: SenderCredentials): Promise<PreparedSend> {
    const payload = entry.payload as OutboxPayload;
    if (payload.type !== 'text') throw new Error('linkedin supports payload type text only');
    if (!sender.secrets.account_id || !sender.secrets.api_key) throw new Error('the LinkedIn account has no Unipile account id or API key');
    const slug = slugOf(entry.recipient);
    let member = entry.recipient.trim();
    let derived: Record<string, unknown> | null = entry.prepared;
    if (slug) {
      member = typeof entry.prepared?.provider_id === 'string' ? entry.prepared.provider_id : await this.resolveMember(sender, slug);
      derived = { ...(entry.prepared ?? {}), provider_id: member };
    }
    const invite = entry.logContext?.linkedin_action === 'invite';
    if (invite) {
      if (codePointLength(payload.body) > INVITE_NOTE_MAX) throw new Error(`an invitation note holds at most ${INVITE_NOTE_MAX} characters`);
      return { body: { action: 'invite', provider_id: member, account_id: sender.secrets.account_id, message: payload.body }, derived };
    }
    return { body: { action: 'message', account_id: sender.secrets.account_id, text: payload.body, attendees_ids: member }, derived };
  }

  async send(prepared: PreparedSend, sender: SenderCredentials): Promise<SendAccepted> {
    const { action, ...fields } = prepared.body as { action: 'invite' | 'message' } & Record<string, string>;
    const headers = { 'x-api-key': sender.secrets.api_key ?? '', accept: 'application/json' };
    let answer;
    if (action === 'invite') {
      answer = await this.unipile.request('/api/v1/users/invite', { method: 'POST', headers, json: fields });
    } else {
      const form = new FormData();
      form.set('account_id', fields.account_id!);
      form.set('text', fields.text!);
      form.append('attendees_ids', fields.attendees_ids!);
      answer = await this.unipile.request('/api/v1/chats', { method: 'POST', headers, form });
    }
    if (isSuccess(answer)) {
      const b = answer.body as { invitation_id?: unknown; message_id?: unknown } | null;
      const id = action === 'invite' ? b?.invitation_id : b?.message_id;
      if (typeof id !== 'string') throw new ProviderCallError({ kind: 'network' }, `unreadable ${answer.status} answer from Unipile`, answer.body);
      return { providerMessageId: id, httpStatus: answer.status, body: answer.body };
    }
    const error = answer.body as { type?: unknown; title?: unknown; detail?: unknown } | null;
    const type = typeof error?.type === 'string' ? error.type : '';
    const refusal = ALREADY_CONNECTED_TYPES.some((p) => p.test(type)) ? ALREADY_CONNECTED_CODE : CONNECTION_HELD_TYPES.some((p) => p.test(type)) ? CONNECTION_HELD_CODE : null;
    throw new ProviderCallError(
      { kind: 'http', httpStatus: answer.status, providerCode: refusal, retryAfterMs: parseRetryAfter(answer.headers.get('retry-after'), this.clock.now()) },
      typeof error?.detail === 'string' ? error.detail : typeof error?.title === 'string' ? error.title : `Unipile answered ${answer.status}`,
      answer.body,
      refusal === ALREADY_CONNECTED_CODE ? 'already_connected' : refusal === CONNECTION_HELD_CODE ? 'connection_held' : type || String(answer.status),
    );
  }

  /**
   * The member id of a public profile: `GET /api/v1/users/{public_identifier}?account_id=…`.
   * @throws ProviderCallError (a 404 fails the entry: no such profile)
   */
  private async resolveMember(sender: SenderCredentials, slug: string): Promise<string> {
    const answer = await this.unipile.request(`/api/v1/users/${encodeURIComponent(slug)}?account_id=${encodeURIComponent(sender.secrets.account_id ?? '')}`, { method: 'GET', headers: { 'x-api-key': sender.secrets.api_key ?? '', accept: 'application/json' } });
    const id = (answer.body as { provider_id?: unknown } | null)?.provider_id;
    if (answer.status === 200 && typeof id === 'string' && id !== '') return id;
    const type = (answer.body as { type?: unknown } | null)?.type;
    throw new ProviderCallError(
      { kind: 'http', httpStatus: answer.status === 200 ? 502 : answer.status, providerCode: null, retryAfterMs: null },
      `the profile ${slug} could not be resolved`,
      answer.body,
      answer.status === 404 ? 'profile_not_found' : typeof type === 'string' ? type : String(answer.status),
    );
  }

  /** As the email adapter; the two refusals are permanent for this entry (the requester decides what follows). */
  classify(failure: WireFailure): Classified {
    return classifyProviderFailure(failure, [ALREADY_CONNECTED_CODE, CONNECTION_HELD_CODE]);
  }
}

/** The public identifier of a LinkedIn profile URL (`https://www.linkedin.com/in/ana-lee/` → `ana-lee`), or null for a member id. */
export function slugOf(recipient: string): string | null {
  const match = /linkedin\.com\/in\/([^/?#\s]+)/i.exec(recipient);
  return match ? decodeURIComponent(match[1]!) : null;
}
