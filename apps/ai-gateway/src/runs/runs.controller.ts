import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { AiRpc, type AiRunResult } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { parseRunRequest } from './run-request.js';
import { RunsService } from './runs.service.js';

/** RPC edge of `ai.run` (libs/contracts `AiRunRequest` → `AiRunResult`). */
@Controller()
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  /** @throws AppError validation_failed for a malformed request; service_unavailable while a same-key run is still in progress */
  @OnRpc(AiRpc.Run)
  run(@Payload() data: unknown): Promise<AiRunResult> {
    return this.runs.run(parseRunRequest(data));
  }
}
