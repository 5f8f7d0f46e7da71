import { Module } from '@nestjs/common';
import { SystemController } from './system.controller.js';

/** `/system/services`: the RPC reachability of every service. */
@Module({ controllers: [SystemController] })
export class SystemModule {}
