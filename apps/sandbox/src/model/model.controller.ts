import { Body, Controller, Headers, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { answerPrompt, taskOf } from './model-answers.js';
import { DEFAULT_TIMEOUT_HOLD_MS, ModelStateService } from './model-state.service.js';

interface ChatCompletionBody {
  model?: unknown;
  messages?: unknown;
  response_format?: unknown;
}

/** Token estimate of the sandbox: one per 4 characters, as a rough English average. */
const CHARS_PER_TOKEN = 4;

/**
 * An OpenAI-compatible `POST /v1/chat/completions` (DESIGN §7): answers deterministically from the
 * prompt in the JSON shape it asks for, with usage numbers, unless the control API scripted
 * something else for this call.
 */
@Controller('v1')
export class ModelController {
  constructor(private readonly state: ModelStateService) {}

  @Post('chat/completions')
  @HttpCode(200)
  async complete(@Body() body: ChatCompletionBody, @Headers('authorization') authorization: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    const messages = Array.isArray(body?.messages) ? (body.messages as { role?: unknown; content?: unknown }[]).map((m) => ({ role: String(m?.role ?? ''), content: typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '') })) : [];
    if (messages.length === 0) {
      await reply.status(400).send(openAiError('messages must be a non-empty array', 'invalid_request_error'));
      return;
    }
    const system = messages
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .join('\n');
    const user = messages
      .filter((m) => m.role === 'user')
      .map((m) => m.content)
      .join('\n');
    const model = typeof body.model === 'string' ? body.model : null;
    const entry = this.state.record({ model, task: taskOf(user), authorized: /^Bearer \S+/.test(authorization ?? ''), response_format: body.response_format ?? null, messages });
    const step = this.state.next();

    if (step && 'fault' in step && step.fault === 'http_error') {
      const status = step.status ?? 500;
      entry.outcome = `http_${status}`;
      await reply.status(status).send(openAiError(step.message ?? 'The server had an error while processing your request.', status >= 500 ? 'server_error' : 'invalid_request_error'));
      return;
    }
    if (step && 'fault' in step && step.fault === 'timeout') {
      entry.outcome = 'timeout';
      await this.state.hold(step.delay_ms ?? DEFAULT_TIMEOUT_HOLD_MS, (release) => reply.raw.on('close', release));
      if (reply.raw.destroyed || reply.raw.writableEnded) return;
    }
    let content: string;
    let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
    if (step && 'fault' in step && step.fault === 'invalid_json') {
      entry.outcome = 'invalid_json';
      content = 'Sure! Here is what I think: {"class": "interested"';
    } else if (step && 'reply' in step) {
      entry.outcome = 'scripted';
      content = typeof step.reply === 'string' ? step.reply : JSON.stringify(step.reply);
      usage = step.usage;
    } else {
      if (entry.outcome === 'pending') entry.outcome = 'answered';
      content = JSON.stringify(answerPrompt(system, user));
    }
    const promptTokens = usage?.prompt_tokens ?? Math.ceil((system.length + user.length) / CHARS_PER_TOKEN);
    const completionTokens = usage?.completion_tokens ?? Math.ceil(content.length / CHARS_PER_TOKEN);
    await reply.status(200).send({
      id: `chatcmpl-sandbox-${entry.seq}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: model ?? 'sandbox-model',
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    });
  }
}

/** OpenAI's error body shape. */
function openAiError(message: string, type: string) {
  return { error: { message, type, param: null, code: null } };
}
