import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { ApiKeysController } from './api-keys.controller.js';

/** The HTTP routes of API key management (the rules are in AccountsModule). */
@Module({ imports: [AccountsModule], controllers: [ApiKeysController] })
export class ApiKeysModule {}
