import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { AI_KINDS, AiRpc, type AiBudgetLimit, type AiBudgetView, type AiKind } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { Clock } from '@touchpoint/time';
import { OnRpc } from '@touchpoint/runtime';
import { BudgetService } from './budget.service.js';
import { ledgerMonthOf } from './price-table.js';

/** RPC edge of the budget: read this month's usage, set an organization's limits. */
@Controller()
export class BudgetController {
  constructor(
    private readonly budget: BudgetService,
    private readonly clock: Clock,
  ) {}

  /** `{organization_id, month?: 'YYYY-MM'}` → `AiBudgetView`. @throws AppError validation_failed */
  @OnRpc(AiRpc.BudgetGet)
  get(@Payload() data: { organization_id?: unknown; month?: unknown }): Promise<AiBudgetView> {
    if (typeof data?.organization_id !== 'string' || !data.organization_id) throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required');
    if (data.month !== undefined && (typeof data.month !== 'string' || !/^\d{4}-(0[1-9]|1[0-2])$/.test(data.month))) {
      throw new AppError(ErrorCode.ValidationFailed, 'month must be YYYY-MM');
    }
    return this.budget.view(data.organization_id, (data.month as string | undefined) ?? ledgerMonthOf(this.clock.now()));
  }

  /** `AiBudgetLimit` → the stored limit. @throws AppError validation_failed */
  @OnRpc(AiRpc.BudgetSetLimit)
  setLimit(@Payload() data: Partial<Record<keyof AiBudgetLimit, unknown>>): Promise<AiBudgetLimit> {
    const problems: string[] = [];
    if (typeof data?.organization_id !== 'string' || !data.organization_id) problems.push('organization_id is required');
    if (data?.kind !== '*' && !AI_KINDS.includes(data?.kind as AiKind)) problems.push(`kind must be * or one of ${AI_KINDS.join(', ')}`);
    const measure = (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v) && v >= 0);
    if (!measure(data?.monthly_tokens) || (typeof data?.monthly_tokens === 'number' && !Number.isInteger(data.monthly_tokens))) {
      problems.push('monthly_tokens must be a whole number ≥ 0 or null');
    }
    if (!measure(data?.monthly_cost_usd)) problems.push('monthly_cost_usd must be a number ≥ 0 or null');
    if (problems.length) throw new AppError(ErrorCode.ValidationFailed, problems[0], { problems });
    return this.budget.setLimit(data as AiBudgetLimit);
  }
}
