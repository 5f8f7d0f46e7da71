import type { FollowupMessageInput } from '@touchpoint/contracts';
import { checkContact, checkString, checkThread, contactLines, isObject, threadLines } from '../input-checks.js';
import type { PromptTemplate } from '../prompt.types.js';

/** Longest follow-up body when the step names none, characters (a WhatsApp text stays short). */
const DEFAULT_MAX_CHARS = 1000;

/** `followup_message`: an AI-written follow-up (seed 000, AI step: low confidence → template or skip). */
export const followupMessageTemplate: PromptTemplate<FollowupMessageInput> = {
  kind: 'followup_message',
  version: 1,
  instructions: [
    'Write one follow-up message to the contact that achieves <objective>.',
    'Use only facts found in the data. Never invent prices, dates, links or promises.',
    'Match the language of the contact (the language line in <contact>, else the language of <thread>).',
    'Plain text, short and friendly, one call to action. No placeholders such as [name] or {name}, no signature.',
    '<limits> gives the longest acceptable body in characters.',
    'confidence is your probability, from 0 to 1, that the message fits the objective and the conversation; give a low value when the thread makes a follow-up look wrong.',
  ],
  output: [
    { name: 'body', type: 'string', description: 'the message text' },
    { name: 'confidence', type: 'number', description: 'from 0 to 1' },
  ],
  validate(input) {
    const problems: string[] = [];
    if (!isObject(input)) return ['input must be an object'];
    checkString(problems, input, 'objective', 'input', true, 4000);
    checkString(problems, input, 'business', 'input', false, 4000);
    checkContact(problems, input, 'contact', 'input');
    checkThread(problems, input, 'thread', 'input', false);
    if (input.max_chars !== undefined && (!Number.isInteger(input.max_chars) || (input.max_chars as number) < 20)) problems.push('input.max_chars must be an integer ≥ 20');
    return problems;
  },
  sections: (input) => [
    { tag: 'objective', body: input.objective },
    { tag: 'business', body: input.business ?? '' },
    { tag: 'contact', body: contactLines(input.contact) },
    { tag: 'thread', body: threadLines(input.thread) },
    { tag: 'limits', body: `max_chars: ${input.max_chars ?? DEFAULT_MAX_CHARS}` },
  ],
};
