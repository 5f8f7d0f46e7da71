import { Inject, Injectable } from '@nestjs/common';
import { buildWhatsAppMessage, type OutboxPayload, validateWhatsAppPayload } from '@touchpoint/contracts';
import { APP_CONFIG } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { type Classified, classifyWhatsAppFailure, parseRetryAfter, type WireFailure } from '../../classification/classification.js';
import type { OutboxDispatcherConfig } from '../../outbox-dispatcher.config.js';
import { type DispatchEntry, type PreparedSend, type ProviderAdapter, ProviderCallError, type SendAccepted, type SenderCredentials } from '../provider-adapter.js';

/** Error codes of socket failures that happen before a request was written: it provably never left. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * WhatsApp Cloud API adapter: `POST {base}/{version}/{phone_number_id}/messages` with a bearer
 * token, and media upload to `/{phone_number_id}/media` during preparation.
 * Every failure of a call is raised as a `ProviderCallError`.
 */
@Injectable()
export class WhatsAppAdapter implements ProviderAdapter {
  readonly channel = 'whatsapp' as const;

  constructor(
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
    private readonly clock: Clock,
  ) {}

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
    const { status, body } = await this.call(sender, 'messages', JSON.stringify(prepared.body), 'application/json');
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
    const { body } = await this.call(sender, 'media', form, undefined);
    const id = (body as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') throw new ProviderCallError({ kind: 'network' }, 'media upload answered without an id', body);
    return id;
  }

  /** One Graph call; raises ProviderCallError for any failure, including a non-2xx answer. */
  private async call(sender: SenderCredentials, edge: 'messages' | 'media', body: string | FormData, contentType: string | undefined): Promise<{ status: number; body: unknown }> {
    const url = `${this.config.WHATSAPP_GRAPH_BASE_URL.replace(/\/+$/, '')}/${this.config.WHATSAPP_GRAPH_VERSION}/${encodeURIComponent(sender.phoneNumberId ?? '')}/${edge}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${sender.secrets.access_token}`, ...(contentType ? { 'content-type': contentType } : {}) },
        body,
        signal: AbortSignal.timeout(this.config.WHATSAPP_SEND_TIMEOUT_MS),
      });
      text = await response.text();
    } catch (err) {
      throw transportError(err);
    }
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { raw: truncateText(text, 2000) };
    }
    if (response.ok) return { status: response.status, body: parsed };
    const error = (parsed as { error?: { code?: unknown; message?: unknown; error_subcode?: unknown; error_data?: { details?: unknown } } } | null)?.error;
    const providerCode = typeof error?.code === 'number' ? error.code : typeof error?.code === 'string' && /^\d+$/.test(error.code) ? Number(error.code) : null;
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), this.clock.now());
    throw new ProviderCallError(
      { kind: 'http', httpStatus: response.status, providerCode, retryAfterMs },
      typeof error?.message === 'string' ? error.message : `Graph answered ${response.status}`,
      parsed,
      providerCode === null ? null : String(providerCode),
      {
        // Meta bases error handling on the code and `error_data.details`; the subcode tells an expired token (463) from a revoked one.
        subcode: typeof error?.error_subcode === 'number' || typeof error?.error_subcode === 'string' ? String(error.error_subcode) : null,
        details: typeof error?.error_data?.details === 'string' ? error.error_data.details : null,
      },
    );
  }
}

/** Maps a fetch failure to a wire failure: timeout, network (may have arrived) or unreachable. */
function transportError(err: unknown): ProviderCallError {
  const e = err as { name?: string; message?: string; cause?: { code?: string; name?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError') {
    return new ProviderCallError({ kind: 'timeout' }, 'Graph did not answer in time', null, 'timeout');
  }
  const code = e?.cause?.code;
  if (code && UNREACHABLE_CODES.has(code)) {
    // The connection was never made, so no request existed: safe to retry like a transient fault.
    return new ProviderCallError({ kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null }, `Graph unreachable (${code})`, null, code);
  }
  return new ProviderCallError({ kind: 'network' }, `network failure: ${e?.cause?.message ?? e?.message ?? String(err)}`, null, code ?? 'network');
}
