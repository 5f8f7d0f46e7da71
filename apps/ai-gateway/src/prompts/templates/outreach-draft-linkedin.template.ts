import type { OutreachDraftLinkedinInput } from '@touchpoint/contracts';
import { checkOutreachContext, checkString, isObject, outreachContextSections } from '../input-checks.js';
import type { PromptTemplate } from '../prompt.types.js';
import { SPECIALIST_RULES } from './outreach-draft-email.template.js';

/** `outreach_draft_linkedin`: the LinkedIn specialist (seed 003 §4.4): a note `{note}` or a message `{body}`. */
export const outreachDraftLinkedinTemplate: PromptTemplate<OutreachDraftLinkedinInput> = {
  kind: 'outreach_draft_linkedin',
  version: 1,
  instructions: ['Write one LinkedIn text to the person in <person>; <draft> says which type.', ...SPECIALIST_RULES, 'linkedin_connection: a connection note in "note", at most 200 characters, with no link.', 'linkedin_message: a message in "body", at most 1000 characters.'],
  output: [
    { name: 'note', type: 'string', description: 'for linkedin_connection: the connection note' },
    { name: 'body', type: 'string', description: 'for linkedin_message: the message' },
  ],
  validate(input) {
    const problems: string[] = [];
    if (!isObject(input)) return ['input must be an object'];
    checkOutreachContext(problems, input);
    checkString(problems, input, 'objective', 'input', true, 2000);
    if (input.type !== 'linkedin_connection' && input.type !== 'linkedin_message') problems.push('input.type must be linkedin_connection or linkedin_message');
    return problems;
  },
  sections: (input) => [...outreachContextSections(input.context), { tag: 'objective', body: input.objective }, { tag: 'draft', body: `channel: linkedin\ntype: ${input.type}` }],
};
