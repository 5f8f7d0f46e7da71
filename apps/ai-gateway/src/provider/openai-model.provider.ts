import { Inject, Injectable } from '@nestjs/common';
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { APP_CONFIG } from '@touchpoint/runtime';
import type { AiGatewayConfig } from '../ai-gateway.config.js';
import { ModelProvider, type ModelRequest, type ModelResponse } from './model-provider.js';

/**
 * `ModelProvider` over the `openai` SDK, against any OpenAI-compatible endpoint (`AI_BASE_URL`:
 * OpenAI, Azure OpenAI's v1 API, Ollama, vLLM, the sandbox). The SDK's own retries are off: a
 * second paid call never retries a failure (seed 003 §4.3, one turn).
 */
@Injectable()
export class OpenAiModelProvider extends ModelProvider {
  readonly configured: boolean;
  private readonly client: OpenAI | undefined;

  constructor(@Inject(APP_CONFIG) private readonly config: AiGatewayConfig) {
    super();
    this.configured = config.modelConfigured;
    this.client = this.configured ? new OpenAI({ baseURL: config.AI_BASE_URL, apiKey: config.AI_API_KEY, maxRetries: 0 }) : undefined;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (!this.client) return { outcome: 'failed', reason: 'no_model_configured' };
    // The SDK's timeout stops at the response headers; our own abort also bounds the body.
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, request.timeoutMs);
    try {
      const completion = await this.client.chat.completions.create(
        {
          model: request.model,
          messages: [
            { role: 'system', content: request.system },
            { role: 'user', content: request.user },
          ],
          response_format: { type: 'json_object' },
          ...(request.maxOutputTokens > 0 ? { max_tokens: request.maxOutputTokens } : {}),
        },
        { timeout: request.timeoutMs, maxRetries: 0, signal: abort.signal },
      );
      const choice = completion.choices?.[0];
      const usage = completion.usage;
      return {
        outcome: 'answered',
        content: typeof choice?.message?.content === 'string' ? choice.message.content : null,
        finishReason: choice?.finish_reason ?? null,
        usage: usage ? { prompt_tokens: usage.prompt_tokens ?? 0, completion_tokens: usage.completion_tokens ?? 0 } : null,
      };
    } catch (err) {
      if (timedOut || err instanceof APIConnectionTimeoutError || (err instanceof APIUserAbortError && abort.signal.aborted)) return { outcome: 'timeout' };
      if (err instanceof APIError && typeof err.status === 'number') return { outcome: 'failed', reason: `provider_http_${err.status}` };
      if (err instanceof APIError) return { outcome: 'failed', reason: 'provider_unreachable' };
      return { outcome: 'failed', reason: 'provider_bad_response' };
    } finally {
      clearTimeout(timer);
    }
  }
}
