import { Global, Module } from '@nestjs/common';
import { ControlController } from './control.controller.js';
import { FaultRegistry } from './fault-registry.service.js';

/** The provider-generic control API and the fault registry every provider module injects. */
@Global()
@Module({ controllers: [ControlController], providers: [FaultRegistry], exports: [FaultRegistry] })
export class ControlModule {}
