import { Global, Module } from '@nestjs/common';
import { ServiceForwarder } from './service-forwarder.js';

/** ServiceForwarder for every route module of the gateway (global: route modules just inject it). */
@Global()
@Module({ providers: [ServiceForwarder], exports: [ServiceForwarder] })
export class ForwardingModule {}
