import type { FlowEdge, FlowGraph, FlowModelView, FlowNode, FlowSettings } from '@touchpoint/contracts';

/**
 * Ready-made flows (seed 002 `GET/POST /ai/followup-flows/from-model`): a small catalog in code.
 * Each model builds a graph that passes publish validation with no organization templates, so a
 * flow created from it can be published and activated as is (tested).
 */

const HOUR = 3_600_000;

interface FlowModel extends FlowModelView {
  build(input: { stageId?: string }): { graph: FlowGraph; settings: FlowSettings };
}

/** Lays nodes out left to right for the builder canvas. */
function layout(nodes: Omit<FlowNode, 'position'>[]): FlowNode[] {
  return nodes.map((n, i) => ({ ...n, position: { x: i * 240, y: 0 } }));
}

let edgeSeq = 0;
const edge = (source: string, target: string, condition: FlowEdge['condition'] = { type: 'always' }): FlowEdge => ({ id: `e${++edgeSeq}`, source, target, condition });
const replied = { type: 'branch', branch_id: 'replied' } as const;
const timeout = { type: 'branch', branch_id: 'timeout' } as const;

const baseSettings = (extra: Partial<FlowSettings['trigger']> = {}): FlowSettings => ({
  trigger: { kind: 'manual', cancel_on_reply: true, ...extra },
  handoff_policy: 'pause',
  purpose: 'utility',
  environment: 'live',
});

function resetEdges<T>(build: () => T): T {
  edgeSeq = 0;
  return build();
}

const MODELS: FlowModel[] = [
  {
    id: 'resume_after_no_reply',
    name: 'Resume after no reply',
    summary: 'Two short nudges when the contact goes quiet, stopping as soon as they answer.',
    journey: 'The contact stopped answering mid-conversation: wait 4 hours for a reply, nudge, wait 12 more hours, nudge once more.',
    trigger_description: 'Enrolled from a conversation (by an agent or over the API) right after our last message.',
    requires_stage: false,
    max_messages: 2,
    build: () =>
      resetEdges(() => ({
        graph: {
          nodes: layout([
            { id: 'start', type: 'trigger', label: 'Start', config: {} },
            { id: 'wait_1', type: 'wait', label: 'Reply within 4 h?', config: { mode: 'reply', timeout_ms: 4 * HOUR } },
            { id: 'nudge_1', type: 'action', label: 'First nudge', config: { mode: 'text', body: 'Olá! Ficou alguma dúvida sobre o que conversamos?' } },
            { id: 'wait_2', type: 'wait', label: 'Reply within 12 h?', config: { mode: 'reply', timeout_ms: 12 * HOUR } },
            { id: 'nudge_2', type: 'action', label: 'Last nudge', config: { mode: 'text', body: 'Sigo por aqui caso queira retomar. É só responder esta mensagem.' } },
            { id: 'answered', type: 'end', label: 'Answered', config: { outcome: 'replied' } },
            { id: 'gave_up', type: 'end', label: 'No answer', config: { outcome: 'exhausted' } },
          ]),
          edges: [edge('start', 'wait_1'), edge('wait_1', 'answered', replied), edge('wait_1', 'nudge_1', timeout), edge('nudge_1', 'wait_2'), edge('wait_2', 'answered', replied), edge('wait_2', 'nudge_2', timeout), edge('nudge_2', 'gave_up')],
        },
        settings: baseSettings(),
      })),
  },
  {
    id: 'post_proposal_check_in',
    name: 'Post-proposal check-in',
    summary: 'Asks whether the contact had a look at the proposal, a couple of hours after it was sent.',
    journey: 'A proposal went out at a deal stage: wait 2 hours, ask about it, and hand over to a person if the contact answers.',
    trigger_description: 'Enrolled when a deal reaches the chosen stage (the stage is recorded on the flow).',
    requires_stage: true,
    max_messages: 1,
    build: ({ stageId }) =>
      resetEdges(() => ({
        graph: {
          nodes: layout([
            { id: 'start', type: 'trigger', label: 'Proposal sent', config: {} },
            { id: 'pause', type: 'wait', label: 'Wait 2 h', config: { mode: 'fixed', duration_ms: 2 * HOUR } },
            { id: 'ask', type: 'action', label: 'Ask about the proposal', config: { mode: 'text', body: 'Oi! Conseguiu dar uma olhada na proposta? Posso esclarecer qualquer ponto.' } },
            { id: 'listen', type: 'wait', label: 'Reply within 20 h?', config: { mode: 'reply', timeout_ms: 20 * HOUR } },
            { id: 'to_person', type: 'action', label: 'Hand over', config: { mode: 'handoff', note: 'The contact answered the proposal check-in.' } },
            { id: 'answered', type: 'end', label: 'Answered', config: { outcome: 'replied' } },
            { id: 'silent', type: 'end', label: 'No answer', config: { outcome: 'no_reply' } },
          ]),
          edges: [edge('start', 'pause'), edge('pause', 'ask'), edge('ask', 'listen'), edge('listen', 'to_person', replied), edge('listen', 'silent', timeout), edge('to_person', 'answered')],
        },
        settings: { ...baseSettings({ stage_id: stageId }), handoff_policy: 'stop' },
      })),
  },
  {
    id: 'appointment_reminder',
    name: 'Appointment reminder',
    summary: 'Reminds the contact of an appointment and reads their confirmation or cancellation.',
    journey: 'Send the reminder with the appointment time, wait up to 6 hours for an answer: a confirmation tags the contact, a cancellation goes to a person.',
    trigger_description: 'Enrolled with an appointment_id and anchor_at (the appointment start), usually the day before; a reminder that comes due after the appointment started is skipped.',
    requires_stage: false,
    max_messages: 1,
    build: () =>
      resetEdges(() => ({
        graph: {
          nodes: layout([
            { id: 'start', type: 'trigger', label: 'Appointment booked', config: {} },
            { id: 'remind', type: 'action', label: 'Reminder', config: { mode: 'text', body: 'Lembrete: seu horário é {{anchor.date}} às {{anchor.time}}. Responda SIM para confirmar ou CANCELAR para desmarcar.', anchor_grace_ms: 0 } },
            { id: 'listen', type: 'wait', label: 'Reply within 6 h?', config: { mode: 'reply', timeout_ms: 6 * HOUR } },
            {
              id: 'read',
              type: 'match_reply',
              label: 'Confirmed?',
              config: {
                branches: [
                  { id: 'confirm', keywords: ['sim', 'confirmo', 'confirmado', 'ok'] },
                  { id: 'cancel', keywords: ['cancelar', 'desmarcar', 'nao posso'] },
                ],
              },
            },
            { id: 'tag', type: 'action', label: 'Tag confirmed', config: { mode: 'tag', tags: ['appointment_confirmed'] } },
            { id: 'to_person', type: 'action', label: 'Hand over', config: { mode: 'handoff', note: 'The contact wants to cancel or reschedule.' } },
            { id: 'confirmed', type: 'end', label: 'Confirmed', config: { outcome: 'confirmed' } },
            { id: 'other', type: 'end', label: 'Other answer', config: { outcome: 'replied' } },
            { id: 'silent', type: 'end', label: 'No answer', config: { outcome: 'no_reply' } },
          ]),
          edges: [
            edge('start', 'remind'),
            edge('remind', 'listen'),
            edge('listen', 'read', replied),
            edge('listen', 'silent', timeout),
            edge('read', 'tag', { type: 'branch', branch_id: 'confirm' }),
            edge('read', 'to_person', { type: 'branch', branch_id: 'cancel' }),
            edge('read', 'other', { type: 'branch', branch_id: 'default' }),
            edge('tag', 'confirmed'),
            edge('to_person', 'other'),
          ],
        },
        // A reply is the point of this flow: it must not stop it.
        settings: { ...baseSettings(), trigger: { kind: 'manual', cancel_on_reply: false } },
      })),
  },
  {
    id: 'reactivate_dormant_lead',
    name: 'Reactivate a dormant lead',
    summary: 'One friendly message to a lead who went quiet, then waits a day for an answer.',
    journey: 'Send one message that invites the lead back, and close the enrollment after 23 hours without an answer.',
    trigger_description: "Enrolled from the lead's conversation, e.g. by an agent reviewing old leads.",
    requires_stage: false,
    max_messages: 1,
    build: () =>
      resetEdges(() => ({
        graph: {
          nodes: layout([
            { id: 'start', type: 'trigger', label: 'Start', config: {} },
            { id: 'invite', type: 'action', label: 'Invite back', config: { mode: 'text', body: 'Olá! Faz um tempo que não conversamos. Posso ajudar com algo?' } },
            { id: 'listen', type: 'wait', label: 'Reply within 23 h?', config: { mode: 'reply', timeout_ms: 23 * HOUR } },
            { id: 'back', type: 'end', label: 'Came back', config: { outcome: 'replied' } },
            { id: 'silent', type: 'end', label: 'Still quiet', config: { outcome: 'no_reply' } },
          ]),
          edges: [edge('start', 'invite'), edge('invite', 'listen'), edge('listen', 'back', replied), edge('listen', 'silent', timeout)],
        },
        settings: baseSettings(),
      })),
  },
];

/** The catalog as `GET /ai/followup-flows/from-model` lists it. */
export function listFlowModels(): FlowModelView[] {
  return MODELS.map(({ build: _build, ...view }) => view);
}

/** A model by id, or undefined. */
export function findFlowModel(id: string): FlowModel | undefined {
  return MODELS.find((m) => m.id === id);
}
