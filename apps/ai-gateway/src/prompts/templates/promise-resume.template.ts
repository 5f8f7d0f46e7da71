import type { PromiseResumeInput } from '@touchpoint/contracts';
import { checkContact, checkString, checkThread, contactLines, isObject, threadLines } from '../input-checks.js';
import type { PromptTemplate } from '../prompt.types.js';

/** `promise_resume`: the agent picks the conversation up at a one-off return ("promise", seed 002). */
export const promiseResumeTemplate: PromptTemplate<PromiseResumeInput> = {
  kind: 'promise_resume',
  version: 1,
  instructions: [
    'Write the short message that resumes the conversation as promised in <promise>.',
    'Refer to what was promised and invite the contact to continue. One or two sentences.',
    'Use only facts found in the data. Match the language of the contact or of <thread>.',
    'Plain text, no placeholders, no signature.',
  ],
  output: [{ name: 'body', type: 'string', description: 'the message text' }],
  validate(input) {
    const problems: string[] = [];
    if (!isObject(input)) return ['input must be an object'];
    checkString(problems, input, 'promise', 'input', true, 2000);
    checkString(problems, input, 'reason', 'input', false, 2000);
    checkString(problems, input, 'promised_at', 'input', false, 64);
    checkString(problems, input, 'business', 'input', false, 4000);
    checkContact(problems, input, 'contact', 'input');
    checkThread(problems, input, 'thread', 'input', false);
    return problems;
  },
  sections: (input) => [
    { tag: 'promise', body: [input.promise, ...(input.reason ? [`reason: ${input.reason}`] : []), ...(input.promised_at ? [`promised_at: ${input.promised_at}`] : [])] },
    { tag: 'business', body: input.business ?? '' },
    { tag: 'contact', body: contactLines(input.contact) },
    { tag: 'thread', body: threadLines(input.thread) },
  ],
};
