import { randomUUID } from 'node:crypto';
import { notificationVariableProblems } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { NotificationsService } from '../notifications.service.js';

describe('notificationVariableProblems (seed 004 "Scenario 1": what reaches the contact is what was meant)', () => {
  it.each([[undefined], [{}], [{ name: 'Ana', amount: 120, paid: true, zero: 0, empty: '' }]])('accepts %j', (variables) => {
    expect(notificationVariableProblems(variables)).toEqual([]);
  });

  it.each([
    [{ name: { x: 1 } }, ['variables.name']],
    [{ when: [1, 2] }, ['variables.when']],
    [{ a: null, b: 'ok', c: Number.NaN, d: Infinity }, ['variables.a', 'variables.c', 'variables.d']],
  ])('refuses %j, naming each bad value', (variables, names) => {
    const problems = notificationVariableProblems(variables);
    expect(problems.map((p) => p.split(' ')[0])).toEqual(names);
  });

  it.each([[null], [[1, 2]], ['x']])('refuses variables that are not an object: %j', (variables) => {
    expect(notificationVariableProblems(variables)).toEqual(['variables must be an object']);
  });
});

describe('NotificationsService.create refuses bad variables on the RPC too, before touching anything', () => {
  // Every collaborator is absent: the check must answer before any of them would be used.
  const sut = new NotificationsService(...(Array.from({ length: 8 }, () => undefined) as unknown as ConstructorParameters<typeof NotificationsService>));

  it('answers validation_failed naming variables.<name>', async () => {
    const call = sut.create({ organization_id: randomUUID(), contact_id: randomUUID(), template_key: 'appt.reminder', variables: { name: { x: 1 }, when: [1, 2] } as never, channels: ['whatsapp'] });
    await expect(call).rejects.toBeInstanceOf(AppError);
    await expect(call).rejects.toMatchObject({ code: ErrorCode.ValidationFailed, details: { field: 'variables.name', problems: [expect.stringMatching(/^variables\.name /), expect.stringMatching(/^variables\.when /)] } });
  });
});
