import { BadRequestException, Body, Controller, Delete, Get, HttpCode, NotFoundException, Param, Post, Query } from '@nestjs/common';
import { type Fault, FaultRegistry, faultProblem, type ReceivedCall, type TakenFault } from './fault-registry.service.js';

/**
 * The sandbox's control API, provider-generic (DESIGN §7): script faults for the next N calls of a
 * provider and list what it received. Provider-specific controls (simulate an inbound message, a
 * status) live in each provider's folder.
 */
@Controller('sandbox/control')
export class ControlController {
  constructor(private readonly registry: FaultRegistry) {}

  /** `{ providers: string[] }`: the providers that registered a fault queue. */
  @Get('providers')
  providers(): { providers: string[] } {
    return { providers: this.registry.registered() };
  }

  /** Body: one `Fault` or `{ faults: Fault[] }` → `{ scripted: n }` (faults now queued). */
  @Post(':provider/faults')
  @HttpCode(200)
  script(@Param('provider') provider: string, @Body() body: unknown): { scripted: number } {
    this.known(provider);
    const faults = Array.isArray((body as { faults?: unknown })?.faults) ? (body as { faults: unknown[] }).faults : [body];
    for (const f of faults) {
      const problem = faultProblem(f);
      if (problem) throw new BadRequestException(problem);
    }
    return { scripted: this.registry.script(provider, faults as Fault[]) };
  }

  @Get(':provider/faults')
  faults(@Param('provider') provider: string): { faults: Fault[] } {
    this.known(provider);
    return { faults: this.registry.faults(provider) };
  }

  /**
   * `?since_ms=` (epoch ms) → `{ taken: TakenFault[] }`: the scripted faults calls consumed, listed
   * the moment each call arrived, so a test can wait until a held call is on the wire.
   */
  @Get(':provider/faults/taken')
  taken(@Param('provider') provider: string, @Query('since_ms') since?: string): { taken: TakenFault[] } {
    this.known(provider);
    return { taken: this.registry.taken(provider, Number(since ?? 0) || 0) };
  }

  @Delete(':provider/faults')
  @HttpCode(200)
  clearFaults(@Param('provider') provider: string): { cleared: true } {
    this.known(provider);
    this.registry.clearFaults(provider);
    return { cleared: true };
  }

  /** `?since_seq=&limit=` → `{ calls: ReceivedCall[] }`, oldest first. */
  @Get(':provider/received')
  received(@Param('provider') provider: string, @Query('since_seq') since?: string, @Query('limit') limit?: string): { calls: ReceivedCall[] } {
    this.known(provider);
    return { calls: this.registry.received(provider, Number(since ?? 0) || 0, Number(limit ?? 0) || undefined) };
  }

  @Delete(':provider/received')
  @HttpCode(200)
  clearReceived(@Param('provider') provider: string): { cleared: true } {
    this.known(provider);
    this.registry.clearReceived(provider);
    return { cleared: true };
  }

  /** Clears every provider's faults and request logs. */
  @Post('reset')
  @HttpCode(200)
  reset(): { reset: true } {
    this.registry.reset();
    return { reset: true };
  }

  private known(provider: string): void {
    if (!this.registry.has(provider)) throw new NotFoundException(`no sandboxed provider named ${provider}`);
  }
}
