import { AI_DEFAULT_OUTPUT_SCHEMAS, type AiInputByKind, type AiKind, type AiOutputSchema } from '@touchpoint/contracts';
import { renderPrompt } from '../../apps/ai-gateway/src/prompts/prompt-renderer.js';
import { PROMPT_TEMPLATES } from '../../apps/ai-gateway/src/prompts/prompt-templates.js';
import { checkOutput } from '../../apps/ai-gateway/src/runs/output-check.js';
import { answerPrompt } from '../../apps/sandbox/src/model/model-answers.js';

/** Renders the real prompt of a kind and lets the sandbox model answer it. */
function answer<K extends AiKind>(kind: K, input: AiInputByKind[K], schema: AiOutputSchema = AI_DEFAULT_OUTPUT_SCHEMAS[kind]): Record<string, unknown> {
  const prompt = renderPrompt(PROMPT_TEMPLATES[kind], input, schema);
  const output = answerPrompt(prompt.system, prompt.user);
  // Whatever it answers passes ai-gateway's check of the same schema.
  expect(checkOutput(JSON.stringify(output), schema)).toMatchObject({ valid: true });
  return output;
}

const classes = [{ id: 'interested', description: 'wants to buy, asks about price' }, { id: 'not_interested', description: 'declines' }, { id: 'reschedule', description: 'asks for another day or time' }, { id: 'other' }];

describe('sandbox model answers (from prompts rendered by ai-gateway)', () => {
  it.each([
    ['What is the price?', 'interested', 0.9],
    ["No thanks, I'm not interested", 'not_interested', 0.9],
    ['Can we reschedule to another day?', 'reschedule', 0.9],
    ['Preço? Não, obrigado', 'other', 0.2],
    ['Who is this?', 'other', 0.2],
  ])('classifies %j as %s', (reply, klass, confidence) => {
    expect(answer('followup_classify', { reply, classes })).toMatchObject({ class: klass, confidence });
  });

  it('reads the reply unescaped: a reply with tags still classifies by its words', () => {
    expect(answer('followup_classify', { reply: '</reply><b>price</b> please', classes })).toMatchObject({ class: 'interested' });
  });

  it('chooses email on a fresh enrollment (no thread, no history)', () => {
    const out = answer('outreach_decide', { context: { campaign: 'Book demos', person: 'name: Sarah Lee' }, trigger: { reason: 'enrolled' }, allowed_actions: ['email', 'linkedin_connection', 'wait', 'stop'] });
    expect(out).toMatchObject({ type: 'email', goal_met: false, suggested_followup_days: 3 });
    expect(out.objective).toContain('Sarah Lee');
  });

  it('chooses the LinkedIn invitation on a fresh enrollment without email', () => {
    expect(answer('outreach_decide', { context: { campaign: 'c' }, trigger: { reason: 'enrolled' }, allowed_actions: ['linkedin_connection', 'wait', 'stop'] })).toMatchObject({ type: 'linkedin_connection' });
  });

  it('answers a newest inbound reply by email, and waits after an unanswered touch', () => {
    const replied = answer('outreach_decide', {
      context: { campaign: 'c', thread: '[email] 2026-10-27 inbound: Can you send pricing?\n[email] 2026-10-20 outbound: Hi Sarah' },
      trigger: { reason: 'reply_received' },
      allowed_actions: ['email', 'wait', 'stop'],
    });
    const waiting = answer('outreach_decide', {
      context: { campaign: 'c', thread: '[email] 2026-10-20 outbound: Hi Sarah', history: 'email executed 2026-10-20' },
      trigger: { reason: 'followup_due' },
      allowed_actions: ['email', 'wait', 'stop'],
    });
    expect(replied).toMatchObject({ type: 'email' });
    expect(replied.rationale).toContain('Can you send pricing?');
    expect(waiting).toMatchObject({ type: 'wait' });
  });

  it('writes a new email after draft_rejected, even with no touch yet, citing the reviewer’s reason', () => {
    const out = answer('outreach_decide', {
      context: {
        campaign: 'c',
        person: 'name: Sarah Lee',
        history: '2026-10-21 action email rejected reject_reason: Too pushy, mention the free trial (then regenerate)\n2026-10-20 decision email [enrolled]: The enrollment is fresh.',
      },
      trigger: { reason: 'draft_rejected', ref: '33333333-3333-4333-8333-333333333333' },
      allowed_actions: ['email', 'wait', 'stop'],
    });
    expect(out).toMatchObject({ type: 'email', goal_met: false });
    expect(out.rationale).toContain('Too pushy, mention the free trial');
    expect(out.objective).toContain('Sarah Lee');
    // Without a reason the answer is still a new draft, not a wait.
    const bare = answer('outreach_decide', {
      context: { campaign: 'c', history: '2026-10-21 action email rejected reject_reason: - (then regenerate)' },
      trigger: { reason: 'draft_rejected' },
      allowed_actions: ['email', 'wait', 'stop'],
    });
    expect(bare).toMatchObject({ type: 'email', rationale: 'The reviewer rejected the last draft without a reason.' });
  });

  it('drafts an email toward the objective, without a subject when it is a reply', () => {
    const context = { campaign: 'c', person: 'name: Sarah' };
    const first = answer('outreach_draft_email', { context, objective: 'Offer a 20 min demo of the chair line', is_reply: false });
    const reply = answer('outreach_draft_email', { context, objective: 'Answer the pricing question', is_reply: true });
    expect(first).toMatchObject({ subject: 'Offer a 20 min demo of', body: expect.stringContaining('Offer a 20 min demo of the chair line.') });
    expect(reply).toEqual({ body: expect.stringContaining('Answer the pricing question.') });
  });

  it('drafts a LinkedIn note of at most 200 characters, or a message body', () => {
    const note = answer('outreach_draft_linkedin', { context: { campaign: 'c' }, type: 'linkedin_connection', objective: 'x'.repeat(400) });
    const message = answer('outreach_draft_linkedin', { context: { campaign: 'c' }, type: 'linkedin_message', objective: 'Ask for a call' });
    expect((note.note as string).length).toBe(200);
    expect(message).toEqual({ body: 'Hi there, Ask for a call.' });
  });

  it('summarises a conversation', () => {
    const out = answer('conversation_summary', {
      messages: [
        { direction: 'inbound', text: 'Can you send the invoice?' },
        { direction: 'outbound', text: 'Sent it now.' },
      ],
    });
    expect(out.summary).toBe('The contact sent 1 message(s) and the team 1. The contact first wrote: "Can you send the invoice?". The last message was: "Sent it now.".');
  });

  it('writes a short resumption of a promise, and a follow-up toward its objective', () => {
    expect(answer('promise_resume', { promise: 'Send the new price list', contact: { name: 'Ana' } })).toEqual({
      body: 'Hi Ana, as promised, I am getting back to you about: Send the new price list. Shall we pick it up from here?',
    });
    expect(answer('followup_message', { objective: 'Ask whether they saw the proposal', contact: { name: 'Ana' } })).toEqual({ body: 'Hi Ana, Ask whether they saw the proposal.', confidence: 0.8 });
  });

  it('fills a field the caller requires beyond the kind’s own shape', () => {
    expect(answer('promise_resume', { promise: 'p' }, { required: { body: 'string', urgency: 'integer' } })).toMatchObject({ urgency: 1 });
  });
});
