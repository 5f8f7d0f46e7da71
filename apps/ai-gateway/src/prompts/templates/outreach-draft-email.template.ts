import type { OutreachDraftEmailInput } from '@touchpoint/contracts';
import { checkOutreachContext, checkString, isObject, outreachContextSections } from '../input-checks.js';
import type { PromptTemplate } from '../prompt.types.js';

/** The specialists' shared writing rules (seed 003 §4.4, instructions 2–5). */
export const SPECIALIST_RULES = [
  'Write toward <objective>. One call to action.',
  'Use only facts in the context. A claim about results needs a line in the context that states it. Never write that you looked at or noticed something.',
  'After draft_rejected in the history, follow its reject_reason.',
  'Plain text. No sign-off, no signature, no placeholders such as [First name] or {company}.',
];

/** `outreach_draft_email`: the Email specialist (seed 003 §4.4): `{subject, body}`, a reply `{body}`. */
export const outreachDraftEmailTemplate: PromptTemplate<OutreachDraftEmailInput> = {
  kind: 'outreach_draft_email',
  version: 1,
  instructions: ['Write one email to the person in <person>.', ...SPECIALIST_RULES, '<draft> says whether this is a reply. A reply answers the newest message in <thread> and has no subject.'],
  output: [
    { name: 'subject', type: 'string', description: 'the subject line; omit it for a reply' },
    { name: 'body', type: 'string', description: 'the email body, plain text' },
  ],
  validate(input) {
    const problems: string[] = [];
    if (!isObject(input)) return ['input must be an object'];
    checkOutreachContext(problems, input);
    checkString(problems, input, 'objective', 'input', true, 2000);
    if (typeof input.is_reply !== 'boolean') problems.push('input.is_reply must be a boolean');
    return problems;
  },
  sections: (input) => [...outreachContextSections(input.context), { tag: 'objective', body: input.objective }, { tag: 'draft', body: `channel: email\nis_reply: ${input.is_reply}` }],
};
