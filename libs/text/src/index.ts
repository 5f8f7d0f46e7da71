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
  // "please don't stop sending me updates" asks for more, not less.
  /(?<!\b(do not|dont|don't|never) )\bstop (emailing|messaging|texting|sending|contacting|writing to|calling) me\b/,
  /(?<!\b(do not|dont|don't|never) )\bstop emailing\b/,
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

/**
 * Subject prefixes of automatic replies (seed 003 "Auto-reply": "Automatic reply", "Auto:", "Out of
 * office", "Autoreply"), plus the out-of-office subjects that Exchange/Outlook, Gmail, Apple Mail
 * and common hosts write in the languages of our users. Compared on the normalised subject (lower
 * case, accents dropped), so `Réponse automatique` matches `reponse automatique`.
 */
export const AUTO_REPLY_SUBJECT_PREFIXES: readonly string[] = [
  // English (seed 003) and common variants
  'automatic reply',
  'auto:',
  'out of office',
  'autoreply',
  'auto-reply',
  'auto reply',
  'auto response',
  'auto-response',
  'autoresponse',
  'automatic response',
  'out of the office',
  'away from the office',
  // Portuguese
  'resposta automatica',
  'ausencia',
  'ausente do escritorio',
  'fora do escritorio',
  'mensagem automatica',
  // Spanish
  'respuesta automatica',
  'fuera de la oficina',
  'fuera de oficina',
  'mensaje automatico',
  // French
  'reponse automatique',
  'absence du bureau',
  'absent du bureau',
  "message d'absence",
  // German
  'automatische antwort',
  'abwesenheitsnotiz',
  'automatische abwesenheitsnotiz',
  // Italian
  'risposta automatica',
  'fuori sede',
  "fuori dall'ufficio",
  // Dutch
  'automatisch antwoord',
  'afwezig',
  'niet aanwezig',
  // Nordic and Polish
  'autosvar',
  'automatisk svar',
  'franvaro',
  'poza biurem',
  'odpowiedz automatyczna',
];

/**
 * Header names whose mere presence marks a machine answer: `X-Autoreply` (seed 003) and the
 * variants vacation responders and hosted mail send (cPanel/Exim `X-Autorespond`, `X-Autoreply-From`,
 * `X-Mail-Autoreply`, qmail `X-Autogenerated`, Freshdesk-style `X-Autoresponder`).
 */
const AUTO_REPLY_HEADER_NAMES = new Set(['x-autoreply', 'x-autorespond', 'x-autoresponder', 'x-autoreply-from', 'x-mail-autoreply', 'x-autogenerated']);

/**
 * `Precedence` values of automatic answers (seed 003: `auto_reply`; `auto-reply` is the same intent
 * spelt as some servers write it). `bulk`, `list` and `junk` are mailing lists, not answers to us.
 */
const AUTO_REPLY_PRECEDENCE = new Set(['auto_reply', 'auto-reply']);

/**
 * The email auto-reply rule (seed 003 §4.7 "Auto-reply"), a pure function:
 * - `Auto-Submitted` with any value other than `no` (RFC 3834: `auto-replied`, `auto-generated`,
 *   `auto-notified`; parameters after `;` ignored). `Auto-Submitted: no` is a human.
 * - any `X-Autoreply`-family header (see `AUTO_REPLY_HEADER_NAMES`), except an explicit `no`/`false`;
 * - `X-Auto-Response-Suppress` is NOT read: clients put it on human mail too;
 * - `Precedence: auto_reply`;
 * - a subject that starts with an out-of-office prefix (`AUTO_REPLY_SUBJECT_PREFIXES`); a human
 *   reply keeps our subject behind `Re:`, so it never starts that way.
 * Header names are case-insensitive; values are trimmed and lower-cased.
 */
export function isAutoReply(input: { headers?: { name: string; value: string }[] | null; subject?: string | null }): boolean {
  for (const header of input.headers ?? []) {
    const name = (header?.name ?? '').trim().toLowerCase();
    const value = String(header?.value ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (name === 'auto-submitted' && value !== '' && value !== 'no') return true;
    if (AUTO_REPLY_HEADER_NAMES.has(name) && value !== 'no' && value !== 'false') return true;
    if (name === 'precedence' && AUTO_REPLY_PRECEDENCE.has(value)) return true;
  }
  const subject = normalizeText(input.subject ?? '');
  return AUTO_REPLY_SUBJECT_PREFIXES.some((prefix) => subject.startsWith(normalizeText(prefix)));
}

export { signUnsubscribeToken, verifyUnsubscribeToken, type UnsubscribeTokenClaims } from './unsubscribe-token.js';
export { codePointLength, toWellFormedText, truncateText, type TruncateTextOptions } from './truncate.js';
