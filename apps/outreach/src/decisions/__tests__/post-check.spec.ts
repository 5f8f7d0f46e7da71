import { postCheck, RATIONALE_MAX } from '../post-check.js';

const cadence = { followup_min_days: 2, followup_max_days: 5 };
const all = ['email', 'linkedin_connection', 'linkedin_message', 'wait', 'stop'];

describe('postCheck', () => {
  it.each([
    ['Email', 'email'],
    ['  EMAIL ', 'email'],
    ['linkedin-connection', 'linkedin_connection'],
    ['LinkedIn Message', 'linkedin_message'],
    ['linkedin -  message', 'linkedin_message'],
    ['Wait', 'wait'],
  ])('normalises the type %j to %s', (given, type) => {
    const result = postCheck({ type: given, rationale: 'r', objective: 'o' }, all, cadence);
    expect(result).toMatchObject({ ok: true, action: { type } });
  });

  it.each([
    [null, 'output_not_an_object'],
    [[1], 'output_not_an_object'],
    [{ rationale: 'r' }, 'type_missing'],
    [{ type: 5, rationale: 'r' }, 'type_missing'],
    [{ type: 'sms', rationale: 'r' }, 'type_not_allowed'],
    [{ type: 'linkedin_message', rationale: 'r', objective: 'o' }, 'type_not_allowed'],
    [{ type: 'wait' }, 'rationale_missing'],
    [{ type: 'wait', rationale: '   ' }, 'rationale_missing'],
    [{ type: 'email', rationale: 'r' }, 'objective_missing'],
    [{ type: 'email', rationale: 'r', objective: ' ' }, 'objective_missing'],
  ])('refuses %j (%s)', (output, reason) => {
    expect(postCheck(output, ['email', 'wait', 'stop'], cadence)).toEqual({ ok: false, reason });
  });

  it.each([
    ['email', 4, 4],
    ['email', 4.4, 4],
    ['email', 4.5, 5],
    ['email', 1, 2],
    ['email', 9, 5],
    ['linkedin_connection', 0, 2],
    ['email', undefined, 2],
    ['email', 'soon', 2],
    ['email', '3', 3],
    ['wait', 9, 9],
    ['wait', 45, 30],
    ['wait', -3, 2],
    ['wait', undefined, 2],
    ['wait', Number.NaN, 2],
  ])('decides the gap of %s from %j as %d days', (type, days, expected) => {
    const result = postCheck({ type, rationale: 'r', objective: 'o', suggested_followup_days: days }, all, cadence);
    expect(result).toMatchObject({ ok: true, action: { followup_days: expected } });
  });

  it('gives stop no gap and goal_met only when it is true', () => {
    expect(postCheck({ type: 'stop', rationale: 'done', goal_met: true }, all, cadence)).toEqual({ ok: true, action: { type: 'stop', rationale: 'done', objective: null, goal_met: true, followup_days: null } });
    expect(postCheck({ type: 'stop', rationale: 'done', goal_met: 'true' }, all, cadence)).toMatchObject({ action: { goal_met: false } });
    expect(postCheck({ type: 'stop', rationale: 'done' }, all, cadence)).toMatchObject({ action: { goal_met: false } });
  });

  it('cuts the rationale at 1000 characters and ignores extra fields', () => {
    const result = postCheck({ type: 'wait', rationale: 'x'.repeat(1500), extra: { a: 1 } }, all, cadence);
    expect(result.ok && result.action.rationale).toHaveLength(RATIONALE_MAX);
  });
});
