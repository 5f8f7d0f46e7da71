import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '../accounts/accounts.module.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { MeController } from './me.controller.js';

/** API key authentication, scopes and tenancy for every route (ApiKeyGuard), and `GET /me`. */
@Global()
@Module({
  imports: [AccountsModule],
  controllers: [MeController],
  providers: [{ provide: APP_GUARD, useClass: ApiKeyGuard }],
})
export class AuthModule {}
