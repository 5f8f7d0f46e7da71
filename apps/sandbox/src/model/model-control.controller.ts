import { BadRequestException, Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { type ModelScriptStep, ModelStateService, type ReceivedModelRequest } from './model-state.service.js';

/**
 * Control API of the model sandbox, for tests and local runs: script the next answers and faults,
 * list what the endpoint received, reset. (Until the shared `control/` API exists, the model has
 * its own routes under `/sandbox/model`.)
 */
@Controller('sandbox/model')
export class ModelControlController {
  constructor(private readonly state: ModelStateService) {}

  /** `{steps: ModelScriptStep[]}` → `{scripted: n}` (calls now scripted ahead). */
  @Post('script')
  @HttpCode(200)
  script(@Body() body: { steps?: unknown }): { scripted: number } {
    if (!Array.isArray(body?.steps) || body.steps.some((s) => !isStep(s))) {
      throw new BadRequestException('steps must be an array of {reply} or {fault: timeout | http_error | invalid_json} objects');
    }
    return { scripted: this.state.enqueue(body.steps as ModelScriptStep[]) };
  }

  /** `{requests: ReceivedModelRequest[]}`, oldest first. */
  @Get('requests')
  requests(): { requests: ReceivedModelRequest[] } {
    return { requests: this.state.requests() };
  }

  /** Clears the script and the request log. */
  @Post('reset')
  @HttpCode(200)
  reset(): { reset: true } {
    this.state.reset();
    return { reset: true };
  }
}

function isStep(value: unknown): boolean {
  if (!value || typeof value !== 'object') return false;
  const step = value as Record<string, unknown>;
  if (step.times !== undefined && (!Number.isInteger(step.times) || (step.times as number) < 1)) return false;
  if ('reply' in step) return true;
  if (step.fault === 'timeout') return step.delay_ms === undefined || (Number.isInteger(step.delay_ms) && (step.delay_ms as number) >= 0);
  if (step.fault === 'http_error') return step.status === undefined || (Number.isInteger(step.status) && (step.status as number) >= 400 && (step.status as number) <= 599);
  return step.fault === 'invalid_json';
}
