/**
 * The seeded generator of the safety suite: which channel, phrasing, timing and mailbox or number
 * each scenario uses. One seed (`SAFETY_SEED`, default fixed) gives the same scenarios on every run,
 * so a failure can be replayed; another seed explores other combinations.
 */

/** mulberry32: a small, well-known 32-bit PRNG; plenty for picking test variants. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export class Variants {
  readonly random: () => number;

  constructor(readonly seed: number) {
    this.random = seeded(seed);
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  /** `n` distinct items (all of them when `n` ≥ length), in a seeded order. */
  sample<T>(items: readonly T[], n: number): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, Math.min(n, copy.length));
  }

  /** A digit string of `length` digits. */
  digits(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += Math.floor(this.random() * 10);
    return out;
  }
}

export type Language = 'en' | 'pt' | 'es';

/**
 * Opt-out messages a person really sends (seed 003 "The phrase rule", seed 004 STOP; the carrier
 * keywords as a whole message, a courtesy after "stop", list phrasings), in three languages.
 */
export const OPT_OUT_PHRASES: ReadonlyArray<{ language: Language; text: string }> = [
  { language: 'en', text: 'STOP' },
  { language: 'en', text: 'Stop please' },
  { language: 'en', text: 'stop, thanks' },
  { language: 'en', text: 'STOPALL' },
  { language: 'en', text: 'UNSUBSCRIBE' },
  { language: 'en', text: 'Quit' },
  { language: 'en', text: 'Please unsubscribe me from this.' },
  { language: 'en', text: 'Please remove me from your list' },
  { language: 'en', text: "Don't contact me again" },
  { language: 'pt', text: 'PARE' },
  { language: 'pt', text: 'Pare, obrigado' },
  { language: 'pt', text: 'Não quero mais receber mensagens' },
  { language: 'pt', text: 'Me tira da lista' },
  { language: 'pt', text: 'Por favor, me remova da lista de vocês' },
  { language: 'pt', text: 'Quero sair' },
  { language: 'es', text: 'BAJA' },
  { language: 'es', text: 'Darme de baja, gracias' },
  { language: 'es', text: 'No quiero recibir más mensajes' },
  { language: 'es', text: 'Sácame de la lista' },
  { language: 'es', text: 'Deja de enviarme mensajes, por favor' },
];

/** Replies that are not opt-outs, some with the words an opt-out rule must not trip on. */
export const HUMAN_REPLIES: ReadonlyArray<{ language: Language; text: string }> = [
  { language: 'en', text: "Thanks! I can't stop laughing at that video 😂" },
  { language: 'en', text: 'What would it cost for a team of ten?' },
  { language: 'en', text: 'Which bus stop is closest to your office?' },
  { language: 'pt', text: 'Obrigado! Qual é o valor?' },
  { language: 'pt', text: 'Não para de chover aqui, te ligo depois' },
  { language: 'pt', text: 'Pode parar na portaria às 15h?' },
  { language: 'es', text: 'Gracias, ¿cuándo podemos hablar?' },
  { language: 'es', text: '¿Dónde está la parada del autobús?' },
];

/** User text past the 4,096-character cut that ends in an emoji: a surrogate pair at the edge. */
export const LONG_EMOJI_REPLIES: readonly string[] = [`${'a'.repeat(4095)}😀`, `${'ç'.repeat(4094)}👍🏽`, `${'Obrigado! '.repeat(409)}🎉🎉`];

/** Out-of-office answers: by header, by subject in several languages, some with "unsubscribe" in a footer. */
export const AUTO_REPLIES: ReadonlyArray<{ by: 'header' | 'subject'; headers: { name: string; value: string }[]; subject?: string; body: string }> = [
  { by: 'header', headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }], body: 'I am away until Monday. To unsubscribe from this list, reply UNSUBSCRIBE.' },
  { by: 'header', headers: [{ name: 'X-Autoreply', value: 'yes' }], body: 'Estou fora do escritório. Please unsubscribe me from marketing lists handled by my assistant.' },
  { by: 'header', headers: [{ name: 'Precedence', value: 'auto_reply' }], body: 'Thanks for your message, I will answer when I am back.' },
  { by: 'header', headers: [{ name: 'Auto-Submitted', value: 'auto-generated; sender=vacation' }], body: 'STOP' },
  { by: 'subject', headers: [], subject: 'Automatic reply: our proposal', body: 'I am out of the office. Unsubscribe links in this footer are managed by IT.' },
  { by: 'subject', headers: [], subject: 'Out of Office: back on the 12th', body: 'Please remove me from your list is not something I can handle now; back soon.' },
  { by: 'subject', headers: [], subject: 'Resposta automática: Ausente', body: 'Estou de férias. Não quero mais receber mensagens neste endereço até voltar.' },
  { by: 'subject', headers: [], subject: 'Respuesta automática: fuera de la oficina', body: 'Estoy de vacaciones. Darme de baja no es posible por este medio.' },
  { by: 'subject', headers: [], subject: 'Abwesenheitsnotiz: Urlaub', body: 'Ich bin im Urlaub. unsubscribe' },
  { by: 'subject', headers: [], subject: 'Réponse automatique : absent du bureau', body: 'Je suis absent.' },
];

/** Where a queued follow-up is when the stop lands (seed 000: the reply wins until the send lane picks it up). */
export type StopTiming =
  /** Stop first, then the enrollment: nothing may be queued at all. */
  | 'before_queued'
  /** The text waits behind the pair pacing interval (the read receipt just sent to the contact). */
  | 'pacing'
  /** The text waits behind a slow provider call to the same pair (a sandbox latency fault on the receipt). */
  | 'slow_provider'
  /** The text's first attempt failed with a retryable error; it waits for its retry. */
  | 'retry_backoff'
  /** The text waits behind a flow `wait`; after the stop, `advance_now` tries to run it. */
  | 'future_wait'
  /** The text's attempt had started (held at the sandbox) when the stop landed: it may arrive. */
  | 'in_flight';

export const STOP_TIMINGS: readonly StopTiming[] = ['pacing', 'slow_provider', 'retry_backoff', 'future_wait', 'in_flight', 'before_queued'];

/** What stops a WhatsApp follow-up (DESIGN §5 rule 3). */
export type WhatsappStop = 'reply' | 'opt_out' | 'long_emoji_reply' | 'handoff' | 'resolved' | 'erased';

export const WHATSAPP_STOPS: readonly WhatsappStop[] = ['reply', 'opt_out', 'long_emoji_reply', 'handoff', 'resolved', 'erased'];
