import type { ConversationSummaryInput } from '@touchpoint/contracts';
import { checkContact, checkThread, contactLines, isObject, threadLines } from '../input-checks.js';
import type { PromptTemplate } from '../prompt.types.js';

/** `conversation_summary`: the summary of a closed conversation instance (seed 004, summarized status). */
export const conversationSummaryTemplate: PromptTemplate<ConversationSummaryInput> = {
  kind: 'conversation_summary',
  version: 1,
  instructions: [
    'Summarise the conversation in <messages> (oldest first) for the team that will read it later.',
    'Say what the contact wanted, what was answered or agreed, and what is still open. Three to six sentences.',
    'Use only what the messages say. Write in the language most of the messages use.',
  ],
  output: [
    { name: 'summary', type: 'string', description: 'the summary, plain text' },
    { name: 'open_items', type: 'array', description: 'short strings, one per open question or promise' },
  ],
  validate(input) {
    const problems: string[] = [];
    if (!isObject(input)) return ['input must be an object'];
    checkThread(problems, input, 'messages', 'input', true);
    if (Array.isArray(input.messages) && input.messages.length === 0) problems.push('input.messages must not be empty');
    checkContact(problems, input, 'contact', 'input');
    return problems;
  },
  sections: (input) => [
    { tag: 'contact', body: contactLines(input.contact) },
    { tag: 'messages', body: threadLines(input.messages) },
  ],
};
