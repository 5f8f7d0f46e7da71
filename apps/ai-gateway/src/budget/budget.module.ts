import { Module } from '@nestjs/common';
import { BudgetController } from './budget.controller.js';
import { BudgetRepository } from './budget.repository.js';
import { BudgetService } from './budget.service.js';

/** The monthly budget ledger and limits per organization and kind. */
@Module({
  controllers: [BudgetController],
  providers: [BudgetRepository, BudgetService],
  exports: [BudgetService],
})
export class BudgetModule {}
