import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { OrganizationsController } from './organizations.controller.js';

/** The HTTP routes of organizations (the rules are in AccountsModule). */
@Module({ imports: [AccountsModule], controllers: [OrganizationsController] })
export class OrganizationsModule {}
