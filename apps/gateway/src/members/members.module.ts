import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { MembersController } from './members.controller.js';

/** The HTTP routes of members (the rules are in AccountsModule). */
@Module({ imports: [AccountsModule], controllers: [MembersController] })
export class MembersModule {}
