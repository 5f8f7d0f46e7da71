import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import http from 'node:http';
import https from 'node:https';

/**
 * Deadline of one try, from the request to the last byte of the answer, ms: a gateway that does not
 * answer makes a failed try (retried where the provider retries), never a delivery that hangs.
 */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/**
 * Connections kept open to one destination (host and port). A burst of webhooks beyond it waits for
 * a free connection, in the order posted, instead of opening a socket per webhook.
 */
export const WEBHOOK_MAX_SOCKETS = 64;

/** What the receiver answered: its status and its body as text (UTF-8). */
export interface WebhookAnswer {
  status: number;
  body: string;
}

const utf8 = new TextDecoder();

/**
 * The HTTP client of the sandbox's webhooks (Meta statuses and inbound messages, Nylas
 * notifications, Unipile deliveries): one POST over a kept-alive connection (`node:http` or
 * `node:https` agent, at most WEBHOOK_MAX_SOCKETS per destination). The body goes out byte for byte
 * as given, with its `content-length` and the caller's headers; no redirect is followed. Plain
 * `node:http` rather than `fetch`: a benchmark makes the sandbox post thousands of webhooks, and
 * fetch's per-request machinery (Request objects, web streams, an AbortSignal each) was most of the
 * sandbox's CPU.
 */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: WEBHOOK_MAX_SOCKETS });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: WEBHOOK_MAX_SOCKETS });

  /**
   * POSTs `body` to `url` (http: or https:) with `headers`; resolves with the answer, whatever its
   * status.
   * @throws Error when no whole answer came: the URL is not http(s), the connection failed
   *   (`connect ECONNREFUSED 127.0.0.1:3000`) or broke, or the answer had not ended after
   *   WEBHOOK_TIMEOUT_MS
   */
  post(url: string, body: string, headers: Record<string, string>): Promise<WebhookAnswer> {
    const target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.reject(new Error(`a webhook URL must be http or https: ${url}`));
    const secure = target.protocol === 'https:';
    const bytes = Buffer.from(body, 'utf8');
    return new Promise<WebhookAnswer>((resolve, reject) => {
      let settled = false;
      const settle = (err: Error | null, answer?: WebhookAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(answer!);
      };
      const request = (secure ? https : http).request(target, { method: 'POST', agent: secure ? this.httpsAgent : this.httpAgent, headers: { ...headers, 'content-length': bytes.length } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => settle(null, { status: response.statusCode ?? 0, body: utf8.decode(Buffer.concat(chunks)) }));
        response.on('error', settle);
        response.on('close', () => {
          if (!response.complete) settle(new Error('the connection closed before the answer ended'));
        });
      });
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${WEBHOOK_TIMEOUT_MS} ms`)), WEBHOOK_TIMEOUT_MS);
      request.on('error', settle);
      request.end(bytes);
    });
  }

  onModuleDestroy(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
