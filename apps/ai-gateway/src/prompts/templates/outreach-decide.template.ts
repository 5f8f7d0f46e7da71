import type { OutreachDecideInput } from '@touchpoint/contracts';
import { checkOutreachContext, checkString, isObject, outreachContextSections } from '../input-checks.js';
import type { PromptTemplate } from '../prompt.types.js';

/** `outreach_decide`: the Outreach Agent's next action for one enrollment (seed 003 §4.3). */
export const outreachDecideTemplate: PromptTemplate<OutreachDecideInput> = {
  kind: 'outreach_decide',
  version: 1,
  instructions: [
    'Choose the next action for this person in the campaign. You choose; you never write the message.',
    'The newest reply outweighs everything. The thread and the history outweigh the trigger reason.',
    'Choose only from <allowed_actions>.',
    'Do not repeat yourself: read the history and every reject_reason. After draft_rejected, follow its reject_reason.',
    'A reply that asks for something, such as a meeting or an answer, gets an email reply.',
    'stop: goal_met is true only when the campaign goal is reached.',
    'objective is one sentence saying what the draft must achieve. rationale is one or two sentences that cite the context.',
  ],
  output: [
    { name: 'type', type: 'string', description: 'one of the allowed actions' },
    { name: 'rationale', type: 'string', description: 'one or two sentences citing the context' },
    { name: 'objective', type: 'string', description: 'for email and linkedin_*: what the draft must achieve' },
    { name: 'goal_met', type: 'boolean', description: 'for stop: whether the campaign goal is reached' },
    { name: 'suggested_followup_days', type: 'number', description: 'days until the next check' },
  ],
  validate(input) {
    const problems: string[] = [];
    if (!isObject(input)) return ['input must be an object'];
    checkOutreachContext(problems, input);
    if (!isObject(input.trigger)) problems.push('input.trigger is required');
    else {
      checkString(problems, input.trigger, 'reason', 'input.trigger', true, 100);
      checkString(problems, input.trigger, 'ref', 'input.trigger', false, 200);
      if (input.trigger.first_touch !== undefined && typeof input.trigger.first_touch !== 'boolean') problems.push('input.trigger.first_touch must be a boolean');
    }
    const actions = input.allowed_actions;
    if (!Array.isArray(actions) || actions.length === 0 || actions.some((a) => typeof a !== 'string' || !/^[a-z_]{1,40}$/.test(a))) {
      problems.push('input.allowed_actions must be a non-empty array of action names');
    }
    return problems;
  },
  sections: (input) => [
    ...outreachContextSections(input.context),
    {
      tag: 'trigger',
      body: [
        `reason: ${input.trigger.reason}`,
        ...(input.trigger.ref ? [`ref: ${input.trigger.ref}`] : []),
        // The first-touch objective (seed 003 §4.7): nothing has gone out yet, whatever the reason says.
        ...(input.trigger.first_touch === true ? ['first_touch: yes (nothing was sent to this person yet: the action opens the conversation toward the campaign goal)'] : []),
      ],
    },
    { tag: 'allowed_actions', body: input.allowed_actions.join(', ') },
  ],
};
