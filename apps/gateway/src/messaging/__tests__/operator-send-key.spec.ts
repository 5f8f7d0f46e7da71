import type { ArgumentMetadata } from '@nestjs/common';
import { AppError } from '@touchpoint/errors';
import { createValidationPipe } from '../../http/validation.js';
import { CreateNotificationDto, OperatorSendDto } from '../dto/messaging.dto.js';

/**
 * The idempotency key of the REST sends is at most 150 characters counted as messaging counts
 * them, in code points: what the gateway passes, messaging takes.
 */
describe('idempotency_key of POST /conversations/{id}/messages and POST /notifications', () => {
  const sut = createValidationPipe();
  const emoji = '\u{1F600}';
  const operatorSend = (key: string) => sut.transform({ idempotency_key: key, text: 'k' }, { type: 'body', metatype: OperatorSendDto } satisfies ArgumentMetadata);
  const notification = (key: string) => sut.transform({ contact_id: '7b0b1c9e-1a4e-4a8e-9c39-2f3a4f5b6c7d', template_key: 'appt.reminder', channels: ['whatsapp'], idempotency_key: key }, { type: 'body', metatype: CreateNotificationDto } satisfies ArgumentMetadata);
  const failureOf = (pending: Promise<unknown>) =>
    pending.then(
      () => undefined,
      (e: unknown) => e,
    );

  it.each([
    ['150 emoji', emoji.repeat(150)],
    ['100 emoji and 3 letters', `${emoji.repeat(100)}-x9`],
    ['150 letters', 'k'.repeat(150)],
  ])('takes %s', async (_case, key) => {
    expect(await operatorSend(key)).toBeInstanceOf(OperatorSendDto);
    expect(await notification(key)).toBeInstanceOf(CreateNotificationDto);
  });

  it.each([
    ['151 emoji', emoji.repeat(151)],
    ['151 letters', 'k'.repeat(151)],
    // 160 code points that class-validator's MaxLength would count as 80: it leaves variation selectors out.
    ['80 hearts written with a variation selector', '\u2764\uFE0F'.repeat(80)],
  ])('answers validation_failed to %s, in the words messaging uses', async (_case, key) => {
    for (const send of [operatorSend, notification]) {
      const err = await failureOf(send(key));
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ code: 'validation_failed', details: [{ field: 'idempotency_key', problems: ['idempotency_key must be at most 150 characters'] }] });
    }
  });
});
