import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { SessionCredential } from './session-credential.js';
import { SessionTokens } from './session-tokens.js';
import { SessionsController } from './sessions.controller.js';
import { SessionsRepository } from './sessions.repository.js';
import { SessionsService } from './sessions.service.js';

/** The operator console's sign-in: sessions, their cookie and CSRF check, and their routes. */
@Module({
  imports: [AccountsModule],
  controllers: [SessionsController],
  providers: [SessionTokens, SessionsRepository, SessionsService, SessionCredential],
  exports: [SessionCredential],
})
export class SessionsModule {}
