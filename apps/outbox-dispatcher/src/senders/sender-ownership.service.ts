import { Inject, Injectable } from '@nestjs/common';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG } from '@touchpoint/runtime';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { ProviderCallError } from '../providers/provider-adapter.js';
import { isSuccess, type ProviderAnswer, ProviderHttp } from '../providers/provider-http.js';

type Provider = 'Meta' | 'Nylas' | 'Unipile';

/**
 * Proof that a credential owns the provider id a sender claims, read from the provider before the
 * sender is stored: whoever registers an id receives its inbound messages, so an id typed without
 * its credential would hand one organization another's customers.
 *
 * - WhatsApp: `GET {graph}/{version}/{phone_number_id}` with the access token answers the number
 *   (Graph answers 190 to a bad token, 100/33 to an id the token cannot see);
 * - email: `GET {nylas}/v3/grants/{grant_id}` with the API key answers the grant (404 when the key's
 *   application has no such grant);
 * - LinkedIn: `GET {unipile}/api/v1/accounts/{account_id}` with `X-API-KEY` answers the account.
 *
 * A refusal is `sender_unverified` (422) with one message for "no such id" and "not yours", so the
 * answer tells nothing about ids the caller cannot read; a provider that cannot answer now (timeout,
 * unreachable, 429, 5xx) is `service_unavailable` (503): retry.
 */
@Injectable()
export class SenderOwnershipService {
  /** The adapters' providers (same base URLs), each call within SENDER_VERIFY_TIMEOUT_MS. */
  private readonly providers: Record<Provider, ProviderHttp>;

  constructor(@Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig) {
    const at = (name: Provider, baseUrl: string) => new ProviderHttp({ name, baseUrl, timeoutMs: config.SENDER_VERIFY_TIMEOUT_MS });
    this.providers = { Meta: at('Meta', config.WHATSAPP_GRAPH_BASE_URL), Nylas: at('Nylas', config.NYLAS_API_BASE_URL), Unipile: at('Unipile', config.UNIPILE_API_BASE_URL) };
  }

  /** @throws AppError sender_unverified, service_unavailable */
  async proveWhatsAppNumber(phoneNumberId: string, accessToken: string): Promise<void> {
    requireHeaderSafe('access_token', accessToken);
    const answer = await this.read('Meta', `/${this.config.WHATSAPP_GRAPH_VERSION}/${encodeURIComponent(phoneNumberId)}?fields=id,display_phone_number,verified_name`, { authorization: `Bearer ${accessToken}` });
    const id = (answer.body as { id?: unknown } | null)?.id;
    if (!isSuccess(answer) || String(id) !== phoneNumberId) throw refused('Meta', 'the access token cannot read this phone number id', answer);
  }

  /** @throws AppError sender_unverified, service_unavailable */
  async proveNylasGrant(grantId: string, apiKey: string): Promise<void> {
    requireHeaderSafe('api_key', apiKey);
    const answer = await this.read('Nylas', `/v3/grants/${encodeURIComponent(grantId)}`, { authorization: `Bearer ${apiKey}` });
    const data = (answer.body as { data?: { id?: unknown; grant_status?: unknown } } | null)?.data;
    if (!isSuccess(answer) || data?.id !== grantId) throw refused('Nylas', 'the API key cannot read this grant', answer);
    if (data.grant_status === 'invalid') throw refused('Nylas', 'the grant has expired and must be re-authenticated at Nylas', answer);
  }

  /** @throws AppError sender_unverified, service_unavailable */
  async proveUnipileAccount(accountId: string, apiKey: string): Promise<void> {
    requireHeaderSafe('api_key', apiKey);
    const answer = await this.read('Unipile', `/api/v1/accounts/${encodeURIComponent(accountId)}`, { 'x-api-key': apiKey, accept: 'application/json' });
    const id = (answer.body as { id?: unknown } | null)?.id;
    if (!isSuccess(answer) || id !== accountId) throw refused('Unipile', 'the API key cannot read this account', answer);
  }

  /** GET `path` (after the provider's base URL). @throws AppError service_unavailable when the provider cannot answer now */
  private async read(provider: Provider, path: string, headers: Record<string, string>): Promise<ProviderAnswer> {
    let answer: ProviderAnswer;
    try {
      answer = await this.providers[provider].request(path, { method: 'GET', headers });
    } catch (err) {
      const reason = err instanceof ProviderCallError ? err.message : String(err);
      throw new AppError(ErrorCode.ServiceUnavailable, `could not reach ${provider} to verify the sender (${reason}); retry later`);
    }
    if (answer.status === 429 || answer.status >= 500) {
      throw new AppError(ErrorCode.ServiceUnavailable, `${provider} could not verify the sender right now (HTTP ${answer.status}); retry later`);
    }
    return answer;
  }
}

/**
 * A credential travels in an HTTP header: control characters (a NUL, a line break) cannot, and
 * would fail the call as if the provider were unreachable. They are the caller's mistake: 400.
 */
function requireHeaderSafe(field: string, value: string): void {
  // eslint-disable-next-line no-control-regex -- matching the control characters a header cannot carry is the point
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) throw new AppError(ErrorCode.ValidationFailed, `${field} holds a control character`, [{ field, problems: ['must not contain control characters'] }]);
}

/** The refusal: the provider's status and error code in the details, never its message (it may name the id's owner). */
function refused(provider: Provider, message: string, answer: ProviderAnswer): AppError {
  const error = (answer.body as { error?: { code?: unknown; type?: unknown } | string; type?: unknown } | null) ?? null;
  const inner = typeof error?.error === 'object' ? error.error : undefined;
  const providerCode = inner?.code ?? inner?.type ?? error?.type ?? null;
  return new AppError(ErrorCode.SenderUnverified, `${message} at ${provider}: the sender is not stored`, { provider: provider.toLowerCase(), provider_status: answer.status, provider_code: providerCode });
}
