import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '../accounts/accounts.module.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { MeController } from './me.controller.js';
import { SessionsModule } from '../sessions/sessions.module.js';

/** API key (or console session) authentication, scopes and tenancy for every route (ApiKeyGuard), `GET /me`, and the console's sign-in. */
@Global()
@Module({
  imports: [AccountsModule, SessionsModule],
  controllers: [MeController],
  providers: [{ provide: APP_GUARD, useClass: ApiKeyGuard }],
})
export class AuthModule {}
