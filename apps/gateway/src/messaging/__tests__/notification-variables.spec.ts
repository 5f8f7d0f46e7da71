import type { ArgumentMetadata } from '@nestjs/common';
import { AppError } from '@touchpoint/errors';
import { createValidationPipe } from '../../http/validation.js';
import { CreateNotificationDto } from '../dto/messaging.dto.js';

describe('POST /notifications body: variables are strings, numbers or booleans', () => {
  const sut = createValidationPipe();
  const body: ArgumentMetadata = { type: 'body', metatype: CreateNotificationDto };
  const base = { contact_id: '7b0b1c9e-1a4e-4a8e-9c39-2f3a4f5b6c7d', template_key: 'appt.reminder', channels: ['whatsapp'] };

  it('accepts strings, numbers and booleans', async () => {
    const value = await sut.transform({ ...base, variables: { name: 'Ana', amount: 120, paid: true } }, body);
    expect(value).toBeInstanceOf(CreateNotificationDto);
  });

  it('answers validation_failed naming each object, array or null value', async () => {
    const err = await sut.transform({ ...base, variables: { name: { x: 1 }, when: [1, 2], gone: null } }, body).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'validation_failed' });
    const details = (err as AppError).details as { field: string; problems: string[] }[];
    expect(details.map((d) => d.field)).toEqual(['variables']);
    const problems = details[0]!.problems.join(' ');
    for (const name of ['variables.name', 'variables.when', 'variables.gone']) expect(problems).toContain(name);
  });
});
