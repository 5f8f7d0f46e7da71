/**
 * Text rules shared by messaging and outreach: quoted-text stripping, accent-insensitive
 * normalisation, the opt-out phrase rule and the email auto-reply rule. Pure functions, no I/O.
 */

/**
 * Lower case, accents removed (NFD + combining marks dropped), curly quotes made plain, runs of
 * whitespace collapsed, trimmed. `"Não QUERO"` → `"nao quero"`.
 */
export function normalizeText(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Lines that start the quoted part of a reply: "On … wrote:" (English), "Em … escreveu:"
 * (Portuguese), "El … escribió:" (Spanish), and the "original message" separators of Outlook and
 * friends. Matched on the normalised line. Seed 003 §4.2 ("The thread") names the English form.
 */
const QUOTE_HEADER_PATTERNS: RegExp[] = [
  /^on\b.{0,200}\bwrote:?$/,
  /^em\b.{0,200}\bescreveu:?$/,
  /^el\b.{0,200}\bescribio:?$/,
  /^-{2,}\s*(original message|mensagem original|mensaje original|forwarded message|mensagem encaminhada|mensaje reenviado)\s*-{2,}$/,
  /^_{5,}$/,
];

/**
 * The new text of a reply: drops every line starting with `>` and everything from the first
 * quote header on (seed 003 §4.2: the lines after "On … wrote:" and the lines starting with ">").
 * A header wrapped over two lines ("On Mon, … Ana <a@x>" / "wrote:") is recognised too.
 */
export function stripQuotedText(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const normalized = normalizeText(line);
    const joined = i + 1 < lines.length ? normalizeText(`${line} ${lines[i + 1]}`) : normalized;
    if (QUOTE_HEADER_PATTERNS.some((p) => p.test(normalized) || (/^(on|em|el)\b/.test(normalized) && p.test(joined)))) break;
    if (/^\s*>/.test(line)) continue;
    kept.push(line);
  }
  return kept.join('\n').trim();
}

/**
 * Messages that opt out when they are the WHOLE message (after quotes are stripped, accents and
 * punctuation dropped). Seed 003 "The phrase rule": the whole message "stop"; we add the same
 * one-word commands in Portuguese and Spanish, and their polite forms.
 */
const WHOLE_MESSAGE_OPT_OUTS = new Set([
  'stop',
  'stop please',
  'please stop',
  'stop all',
  'unsubscribe',
  'opt out',
  'optout',
  'pare',
  'parem',
  'parar',
  'para',
  'pare por favor',
  'por favor pare',
  'sair',
  'quero sair',
  'descadastrar',
  'cancelar inscricao',
  'baja',
  'darme de baja',
  'alto',
  'basta',
]);

/**
 * Phrases that opt out wherever they appear in the message (normalised, punctuation as spaces).
 * Seed 003 "The phrase rule": "unsubscribe", "remove me", "stop emailing", "not interested, please
 * stop"; we add the equivalents for WhatsApp and LinkedIn and their Portuguese and Spanish forms.
 * Verb phrases exclude a negation right before them ("não pare de me enviar" keeps them coming).
 */
const CONTAINED_OPT_OUTS: RegExp[] = [
  // English
  /\bunsubscribe\b/,
  /\bremove me\b/,
  /\bstop (emailing|messaging|texting|sending|contacting|writing to|calling) me\b/,
  /\bstop emailing\b/,
  /\bnot interested please stop\b/,
  /\b(do not|dont|don't) (contact|message|text|email) me( again| anymore| any more)?\b/,
  /\btake me off (your|the|this) (list|mailing list)\b/,
  /\bopt me out\b/,
  // Portuguese
  /\b(me )?descadastr(ar|e|em)\b/,
  /\bme (remova|remove|removam|tire|tirem)\b/,
  /\b(remova|remover|removam|tire|tirar|tirem) (o )?meu (numero|contato|email|e-mail)\b/,
  /\b(tire|tirar|tirem)( me)? da (lista|sua lista)\b/,
  /\bnao (quero|desejo) (mais )?receber\b/,
  /\bnao (me )?(mande|mandem|envie|enviem) mais\b/,
  /(?<!\bnao )\bparem? de me (enviar|mandar|contatar|ligar|escrever)\b/,
  /\bcancelar (minha )?inscricao\b/,
  // Spanish
  /\b(darme|dar|darse|denme|deme) de baja\b/,
  /\bno (quiero|deseo) recibir mas\b/,
  /\bno (me )?(envies|envien|mandes|manden|escribas|escriban) mas\b/,
  /(?<!\bno )\b(deja|dejen) de (enviarme|escribirme|mandarme|contactarme)\b/,
  /\b(eliminame|sacame|quitame|borrame|eliminenme|saquenme|quitenme|borrenme) de (la|su|tu) lista\b/,
  /\bcancelar (mi )?suscripcion\b/,
];

/** Normalised text with punctuation turned into spaces (apostrophes kept), collapsed. */
function wordsOf(text: string): string {
  return normalizeText(text)
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The shared opt-out phrase rule (seed 003 "The phrase rule", extended to Portuguese and Spanish;
 * used by messaging on every inbound message and by outreach on replies). Quoted text is stripped
 * first, then accents, case and punctuation are ignored. Opts out when the whole message is a stop
 * command (`"STOP!"`, `"Pare."`, `"baja"`) or when it contains an opt-out phrase (`"please remove
 * me from this list"`, `"não quero mais receber"`). "stop" inside a longer sentence that is not an
 * opt-out (`"I can't stop laughing"`) does not opt out.
 */
export function isOptOut(text: string | null | undefined): boolean {
  if (!text) return false;
  const words = wordsOf(stripQuotedText(text));
  if (words.length === 0) return false;
  if (WHOLE_MESSAGE_OPT_OUTS.has(words)) return true;
  return CONTAINED_OPT_OUTS.some((p) => p.test(words));
}

/** Subject prefixes of automatic replies (seed 003 "Auto-reply"), plus Portuguese and Spanish forms. */
const AUTO_REPLY_SUBJECTS = ['automatic reply', 'auto:', 'out of office', 'autoreply', 'auto-reply', 'resposta automatica', 'ausencia', 'fora do escritorio', 'respuesta automatica', 'fuera de la oficina'];

/**
 * The email auto-reply rule (seed 003 "Auto-reply"): `Auto-Submitted` other than `no`, any
 * `X-Autoreply`/`X-Autorespond`, `Precedence: auto_reply`, or a subject starting with an
 * out-of-office prefix. Header names are case-insensitive.
 */
export function isAutoReply(input: { headers?: { name: string; value: string }[] | null; subject?: string | null }): boolean {
  for (const header of input.headers ?? []) {
    const name = header.name.toLowerCase();
    const value = (header.value ?? '').trim().toLowerCase();
    if (name === 'auto-submitted' && value !== '' && value !== 'no') return true;
    if (name === 'x-autoreply' || name === 'x-autorespond') return true;
    if (name === 'precedence' && value === 'auto_reply') return true;
  }
  const subject = normalizeText(input.subject ?? '');
  return AUTO_REPLY_SUBJECTS.some((prefix) => subject.startsWith(prefix));
}
