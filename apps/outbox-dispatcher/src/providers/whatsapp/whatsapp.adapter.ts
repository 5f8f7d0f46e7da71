import { Inject, Injectable } from '@nestjs/common';
import { buildWhatsAppMessage, type OutboxPayload, validateWhatsAppPayload } from '@touchpoint/contracts';
import { APP_CONFIG } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type Classified, classifyWhatsAppFailure, parseRetryAfter, type WireFailure } from '../../classification/classification.js';
import type { OutboxDispatcherConfig } from '../../outbox-dispatcher.config.js';
import { type DispatchEntry, type PreparedSend, type ProviderAdapter, ProviderCallError, type SendAccepted, type SenderCredentials } from '../provider-adapter.js';
import { isSuccess, ProviderHttp } from '../provider-http.js';

/**
 * WhatsApp Cloud API adapter: `POST {base}/{version}/{phone_number_id}/messages` with a bearer
 * token, and media upload to `/{phone_number_id}/media` during preparation.
 * Every failure of a call is raised as a `ProviderCallError`.
 */
@Injectable()
export class WhatsAppAdapter implements ProviderAdapter {
  readonly channel = 'whatsapp' as const;

  private readonly graph: ProviderHttp;

  constructor(
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
    private readonly clock: Clock,
  ) {
    this.graph = new ProviderHttp({ name: 'Graph', baseUrl: config.WHATSAPP_GRAPH_BASE_URL, timeoutMs: config.WHATSAPP_SEND_TIMEOUT_MS });
  }

  validate(payload: unknown, idempotencyKey: string): string[] {
    return validateWhatsAppPayload(payload, idempotencyKey);
  }

  classify(failure: WireFailure): Classified {
    return classifyWhatsAppFailure(failure, this.config.WHATSAPP_QUALITY_COOLDOWN_MS);
  }

  needsRemotePreparation(entry: DispatchEntry): boolean {
    return entry.payload.type === 'media' && Boolean(entry.payload.upload) && typeof entry.prepared?.media_id !== 'string';
  }

  async prepare(entry: DispatchEntry, sender: SenderCredentials): Promise<PreparedSend> {
    const problems = validateWhatsAppPayload(entry.payload, entry.payload.type === 'read_receipt' ? `read:${entry.payload.message_id}` : '');
    if (problems.length) throw new Error(`invalid payload: ${problems.join('; ')}`);
    if (!sender.phoneNumberId || !sender.secrets.access_token) throw new Error('sender has no phone number id or access token');
    const payload: OutboxPayload = entry.payload;
    let derived: Record<string, unknown> | null = entry.prepared;
    let mediaId: string | undefined;
    if (payload.type === 'media' && payload.upload) {
      mediaId = typeof derived?.media_id === 'string' ? derived.media_id : undefined;
      if (!mediaId) {
        mediaId = await this.uploadMedia(sender, payload.upload);
        derived = { ...(derived ?? {}), media_id: mediaId };
      }
    }
    return { body: buildWhatsAppMessage(payload, entry.recipient, entry.entryId, mediaId), derived };
  }

  async send(prepared: PreparedSend, sender: SenderCredentials): Promise<SendAccepted> {
    const { status, body } = await this.call(sender, 'messages', { json: prepared.body });
    const messages = (body as { messages?: { id?: unknown }[] } | null)?.messages;
    const wamid = Array.isArray(messages) && typeof messages[0]?.id === 'string' ? messages[0].id : null;
    const isReadReceipt = prepared.body.status === 'read';
    if (!wamid && !(isReadReceipt && (body as { success?: unknown } | null)?.success === true)) {
      // A 2xx we cannot read: the provider may well have taken the message.
      throw new ProviderCallError({ kind: 'network' }, `unreadable ${status} answer from Graph`, body);
    }
    return { providerMessageId: wamid, httpStatus: status, body };
  }

  /** Uploads inline bytes, returns the media id. */
  private async uploadMedia(sender: SenderCredentials, upload: { data_base64: string; mime_type: string; filename?: string }): Promise<string> {
    const form = new FormData();
    form.set('messaging_product', 'whatsapp');
    form.set('type', upload.mime_type);
    form.set('file', new Blob([Buffer.from(upload.data_base64, 'base64')], { type: upload.mime_type }), upload.filename ?? 'file');
    const { body } = await this.call(sender, 'media', { form });
    const id = (body as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') throw new ProviderCallError({ kind: 'network' }, 'media upload answered without an id', body);
    return id;
  }

  /** One Graph call; raises ProviderCallError for any failure, including a non-2xx answer. */
  private async call(sender: SenderCredentials, edge: 'messages' | 'media', request: { json?: unknown; form?: FormData }): Promise<{ status: number; body: unknown }> {
    const answer = await this.graph.request(`/${this.config.WHATSAPP_GRAPH_VERSION}/${encodeURIComponent(sender.phoneNumberId ?? '')}/${edge}`, { method: 'POST', headers: { authorization: `Bearer ${sender.secrets.access_token}` }, ...request });
    const parsed = answer.body;
    if (isSuccess(answer)) return { status: answer.status, body: parsed };
    const error = (parsed as { error?: { code?: unknown; message?: unknown; error_subcode?: unknown; error_data?: { details?: unknown } } } | null)?.error;
    const providerCode = typeof error?.code === 'number' ? error.code : typeof error?.code === 'string' && /^\d+$/.test(error.code) ? Number(error.code) : null;
    const retryAfterMs = parseRetryAfter(answer.headers.get('retry-after'), this.clock.now());
    throw new ProviderCallError({ kind: 'http', httpStatus: answer.status, providerCode, retryAfterMs }, typeof error?.message === 'string' ? error.message : `Graph answered ${answer.status}`, parsed, providerCode === null ? null : String(providerCode), {
      // Meta bases error handling on the code and `error_data.details`; the subcode tells an expired token (463) from a revoked one.
      subcode: typeof error?.error_subcode === 'number' || typeof error?.error_subcode === 'string' ? String(error.error_subcode) : null,
      details: typeof error?.error_data?.details === 'string' ? error.error_data.details : null,
    });
  }
}
