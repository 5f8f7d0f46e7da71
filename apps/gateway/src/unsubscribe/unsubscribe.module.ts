import { Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { SuppressionsController } from './suppressions.controller.js';
import { UnsubscribeController } from './unsubscribe.controller.js';

/**
 * `GET|POST /nylas/email/unsubscribe`: the signed unsubscribe link and RFC 8058 one-click; and
 * `GET|POST|DELETE /suppressions`: an admin searches the do-not-contact list, adds a row, removes one with a note.
 */
@Module({ controllers: [UnsubscribeController, SuppressionsController] })
export class UnsubscribeModule implements OnModuleInit {
  constructor(private readonly host: HttpAdapterHost) {}

  /** Mail clients may send the one-click body as multipart form data; the token is in the URL, so the body is read and dropped. */
  onModuleInit(): void {
    const fastify = this.host.httpAdapter?.getInstance?.() as FastifyInstance | undefined;
    if (fastify && !fastify.hasContentTypeParser('multipart/form-data')) {
      fastify.addContentTypeParser('multipart/form-data', { parseAs: 'string' }, (_request, _body, done) => done(null, {}));
    }
  }
}
