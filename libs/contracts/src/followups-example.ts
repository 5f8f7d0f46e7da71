import type { FlowGraph, FlowSettings } from './followups.js';

/**
 * The example body of `POST /ai/followup-flows` in seed 002 ("Retomada em 4 horas"), verbatim: the
 * route must accept it as written and it must publish cleanly (seed 002 asks for a test of both).
 * The demo sends it with `customer_id` replaced by its organization; tests use it as is.
 */
export const SEED_002_FLOW_EXAMPLE: { customer_id: string; name: string; graph: FlowGraph; settings: FlowSettings } = {
  customer_id: '11111111-1111-4111-8111-111111111111',
  name: 'Retomada em 4 horas',
  graph: {
    nodes: [
      {
        id: 'inicio',
        type: 'trigger',
        label: 'Início',
        position: {
          x: 0,
          y: 0,
        },
        config: {},
      },
      {
        id: 'espera',
        type: 'wait',
        label: 'Esperar 4 horas',
        position: {
          x: 240,
          y: 0,
        },
        config: {
          mode: 'fixed',
          duration_ms: 14400000,
        },
      },
      {
        id: 'lembrete',
        type: 'action',
        label: 'Lembrete',
        position: {
          x: 480,
          y: 0,
        },
        config: {
          mode: 'text',
          body: 'Oi! Conseguiu ver a proposta que enviamos?',
        },
      },
      {
        id: 'fim',
        type: 'end',
        label: 'Fim',
        position: {
          x: 720,
          y: 0,
        },
        config: {
          outcome: 'exhausted',
        },
      },
    ],
    edges: [
      {
        id: 'e1',
        source: 'inicio',
        target: 'espera',
        condition: {
          type: 'always',
        },
      },
      {
        id: 'e2',
        source: 'espera',
        target: 'lembrete',
        condition: {
          type: 'always',
        },
      },
      {
        id: 'e3',
        source: 'lembrete',
        target: 'fim',
        condition: {
          type: 'always',
        },
      },
    ],
  },
  settings: {
    trigger: {
      kind: 'manual',
      cancel_on_reply: true,
    },
    handoff_policy: 'pause',
    send_start_hour: 9,
    send_end_hour: 20,
    send_days: [1, 2, 3, 4, 5],
    timezone: 'America/Sao_Paulo',
    purpose: 'utility',
    environment: 'live',
  },
};
