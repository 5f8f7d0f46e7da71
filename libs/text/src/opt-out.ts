/**
 * The opt-out phrase rule: does this inbound text ask us to stop contacting the person? Seed 003
 * §4.7 "The phrase rule" (quoted text stripped; opts out on "unsubscribe", "remove me", "stop
 * emailing", "not interested, please stop", or the whole message "stop" with punctuation dropped),
 * extended to WhatsApp's carrier-style keywords and to Portuguese and Spanish. Pure, no I/O.
 *
 * How a message is read:
 * 1. Quoted earlier text is dropped (`stripQuotedText`), then a signature (after a `-- ` line or a
 *    sign-off line such as "Best," or "Atenciosamente,") and trailing "Sent from my iPhone" lines.
 * 2. The rest is split into clauses at sentence punctuation and line breaks; each clause is
 *    normalised (lower case, accents dropped, emoji and symbols dropped, apostrophes kept).
 * 3. Whole-message commands: after dropping courtesy words at each clause's ends ("please",
 *    "thanks", "por favor", "obrigado", "gracias", "not interested", greetings) and clauses made of
 *    nothing else, every clause left is a stop command ("STOP", "Stop. Thank you", "pare,
 *    obrigado", "UNSUBSCRIBE!!"). A command word inside a longer clause is not one ("I can't stop
 *    laughing", "Can I cancel my appointment?", "para quando é a entrega?").
 * 4. Contained phrases: a clause that holds an unambiguous opt-out phrase ("take me off your list",
 *    "me tira da lista", "no me escriban más"), unless a negation stands right before it in the
 *    same clause ("don't stop sending me updates", "não pare de me mandar").
 */
import { normalizeText, stripQuotedText } from './index.js';

/**
 * Whole-clause stop commands, normalised. The carrier keywords (STOP, STOPALL, UNSUBSCRIBE,
 * CANCEL, END, QUIT, and OPTOUT, REVOKE, STOP ALL) and their Portuguese and Spanish
 * counterparts. "para"/"parar" count only here, as the whole message: "para" is also a preposition.
 */
const STOP_COMMANDS = new Set([
  // English: carrier keywords and plain requests
  'stop',
  'stopall',
  'stop all',
  'stop it',
  'stop now',
  'stop messaging',
  'stop messages',
  'stop the messages',
  'stop texting',
  'stop texts',
  'stop sending',
  'stop emailing',
  'stop emails',
  'stop calling',
  'stop contacting me',
  'unsubscribe',
  'unsubscribe me',
  'unsub',
  'cancel',
  'cancel all',
  'end',
  'quit',
  'opt out',
  'optout',
  'opt me out',
  'revoke',
  'remove me',
  'take me off',
  'leave me alone',
  // Portuguese
  'pare',
  'parem',
  'parar',
  'para',
  'pare ja',
  'pare agora',
  'parem ja',
  'parem agora',
  'sair',
  'quero sair',
  'descadastrar',
  'descadastre',
  'descadastra',
  'descadastro',
  'me descadastre',
  'me descadastra',
  'cancelar inscricao',
  'cancelar a inscricao',
  'cancelar minha inscricao',
  'remover',
  'me remova',
  'me remove',
  'me tira',
  'me tire',
  'me tirem',
  'me exclua',
  'me exclui',
  'basta',
  'chega',
  'chega de mensagens',
  'nao quero mais',
  'nao mande mais',
  'nao me mande mais',
  'nao envie mais',
  // Spanish
  'baja',
  'la baja',
  'de baja',
  'darme de baja',
  'dar de baja',
  'alto',
  'ya basta',
  'basta ya',
  'para ya',
  'paren ya',
  'paren',
  'detener',
  'detente',
  'cancelar suscripcion',
  'cancelar mi suscripcion',
  'desuscribir',
  'desuscribirme',
  'no mas mensajes',
]);

/**
 * Courtesy around a command, dropped from a clause's start and end (and clauses made only of
 * them): politeness, thanks, greetings, and "not interested" (seed 003's "not interested, please
 * stop"). Normalised; longer phrases are tried first.
 */
const COURTESY_PHRASES: readonly string[][] = [
  // English
  'please',
  'pls',
  'plz',
  'plis',
  'pleas',
  'pleaseee',
  'kindly',
  'thanks',
  'thank you',
  'thank u',
  'thankyou',
  'thanx',
  'thx',
  'ty',
  'tks',
  'cheers',
  'thank you very much',
  'thanks a lot',
  'many thanks',
  'thanks so much',
  'thank you so much',
  'thanks very much',
  'regards',
  'best regards',
  'kind regards',
  'no thanks',
  'no thank you',
  'sorry',
  'ok',
  'okay',
  'hi',
  'hello',
  'hey',
  'good morning',
  'good afternoon',
  'good evening',
  'not interested',
  'im not interested',
  "i'm not interested",
  'i am not interested',
  // Portuguese
  'por favor',
  'porfavor',
  'pf',
  'pfv',
  'pfvr',
  'obrigado',
  'obrigada',
  'muito obrigado',
  'muito obrigada',
  'obg',
  'obgd',
  'brigado',
  'brigada',
  'valeu',
  'vlw',
  'grato',
  'grata',
  'por gentileza',
  'gentileza',
  'obrigado pela atencao',
  'obrigada pela atencao',
  'agradeco',
  'desde ja obrigado',
  'desde ja obrigada',
  'oi',
  'ola',
  'bom dia',
  'boa tarde',
  'boa noite',
  'nao obrigado',
  'nao obrigada',
  'sem interesse',
  'nao tenho interesse',
  'nao me interessa',
  // Spanish
  'porfa',
  'porfis',
  'gracias',
  'muchas gracias',
  'hola',
  'buenos dias',
  'buenas tardes',
  'buenas noches',
  'no gracias',
  'no me interesa',
  'no estoy interesado',
  'no estoy interesada',
  'no tengo interes',
]
  .map((p) => p.split(' '))
  .sort((a, b) => b.length - a.length);

/** A bare "no" is courtesy only as a clause of its own ("Não, pare"): "não para" is not "para". */
const BARE_REFUSALS = new Set(['no', 'nao', 'nope']);

/**
 * A negation right before a contained phrase, in the same clause, with at most one word between
 * besides pronouns ("don't ever stop emailing me", "não quero sair da lista", "não quero que vocês
 * parem de me mandar", "no dejes de escribirme"): it asks for the opposite. A lookbehind,
 * prepended to each contained pattern.
 */
const NOT_NEGATED = String.raw`(?<!\b(?:not|no|nao|don't|dont|do not|never|nunca|jamais)(?: \S+)?(?: (?:me|to|you|que|voce|voces|vc|vcs|ustedes))* )`;

/** Verbs of "take me off / remove me" in Portuguese (imperative and infinitive forms). */
const PT_REMOVE = String.raw`(?:tira|tire|tirem|tirar|retira|retire|retirem|retirar|remove|remova|removam|remover|exclui|exclua|excluam|excluir|apaga|apague|apaguem|apagar|deleta|delete|deletem|deletar|descadastra|descadastre|descadastrem|descadastrar)`;

/** Where a person is taken off from, in Portuguese ("da lista", "dessa lista", "do cadastro"). */
const PT_LIST = String.raw`(?:da|dessa|desta|de sua|da sua|dessa sua|de tua|da tua|do|deste|desse|do seu|dos|dos seus) (?:lista|listas|cadastro|base|contatos|mailing|grupo|lista de transmissao)\b`;

/** What of theirs a person asks to remove ("meu número", "meu e-mail"). */
const PT_MINE = String.raw`(?:o )?meu (?:numero|contato|telefone|celular|whatsapp|zap|email|e mail|nome|cadastro)`;

/**
 * Phrases that opt out wherever they stand in a clause (normalised). Seed 003's "unsubscribe",
 * "remove me" and "stop emailing", and their equivalents in the three languages. Each is tested
 * per clause, with `NOT_NEGATED` before it.
 */
const CONTAINED_OPT_OUTS: RegExp[] = [
  // English
  String.raw`\bunsubscribe\b`,
  String.raw`\bremove me\b`,
  String.raw`\bstop (?:emailing|messaging|texting|sending|contacting|writing to|calling|spamming|bothering|mailing) (?:me|us)\b`,
  String.raw`\bstop emailing\b`,
  String.raw`\bstop sending (?:me )?(?:these|those|your|this|all|any|more|so many) ?(?:messages|message|texts|text|emails|email|mails|sms|spam|stuff)\b`,
  String.raw`\bnot interested please stop\b`,
  String.raw`\b(?:do not|dont|don't|never) (?:contact|message|text|email|call|write to|bother) (?:me|us) ?(?:again|anymore|any more|ever again|$)`,
  String.raw`\btake (?:me|my (?:number|email|name|details)) (?:off|out of|from) (?:your|the|this|ur|that|all|every|any) ?(?:\S+ )?(?:list|lists)\b`,
  String.raw`\b(?:remove|delete|erase|take) my (?:number|phone number|email|email address|contact|details|info|information|data) (?:from|off|out of)\b`,
  String.raw`\blose my number\b`,
  String.raw`\b(?:delete|erase) my (?:number|phone number|contact|details|data)$`,
  String.raw`\bopt me out\b`,
  String.raw`\b(?:want|would like|wish|need) to (?:opt out|unsub)\b`,
  String.raw`\bno more (?:messages|message|texts|emails|mails|msgs|sms|spam)\b`,
  String.raw`\bleave me alone\b`,
  // Portuguese
  String.raw`\bdescadastr(?:ar|e|em|a|o)\b`,
  String.raw`\bme ${PT_REMOVE}(?: daqui| dai)?(?: ${PT_LIST}|$)`,
  String.raw`\b${PT_REMOVE} me(?: daqui| dai)?(?: ${PT_LIST}|$)`,
  String.raw`\b${PT_REMOVE} ${PT_MINE}(?: ${PT_LIST}|$)`,
  String.raw`\b(?:sair|saio|sai|me tirar) (?:da|dessa|desta|de sua|da sua|dessa sua|do seu|do) (?:lista|listas|cadastro|mailing|lista de transmissao)\b`,
  String.raw`\bnao (?:quero|desejo|gostaria de) (?:mais receber|receber mais)\b`,
  String.raw`\bnao (?:quero|desejo|gostaria de) (?:mais |receber |mais receber )(?:mensagens|mensagem|msg|msgs|e mails|e mail|emails|email|sms|propagandas|propaganda|promocoes|ofertas|novidades|contato)\b`,
  String.raw`\b(?:nao|nunca mais) (?:me )?(?:mande|mandem|manda|envie|enviem|envia|ligue|liguem|liga|escreva|escrevam|procure|procurem) mais\b`,
  String.raw`\bnunca mais (?:me )?(?:mande|mandem|manda|envie|enviem|envia|ligue|liguem|liga|escreva|escrevam|procure|procurem)\b`,
  String.raw`\b(?:(?:pare|parem) de (?:me )?|para de me )(?:enviar|mandar|contatar|ligar|escrever|incomodar|perturbar|importunar)\b`,
  // "para de mandar mensagem": without "me", "para de" only with what is being sent after it.
  String.raw`\bpara de (?:enviar|mandar) (?:mensagem|mensagens|msg|msgs|e mail|e mails|email|emails|sms|propaganda|propagandas)\b`,
  String.raw`\bchega de (?:mensagens|mensagem|msg|msgs|spam|propaganda|propagandas|e mails|emails)\b`,
  String.raw`\bcancelar (?:a |minha )?inscricao\b(?! (?:no|na|nos|nas|em|para|pra)\b)`,
  // Spanish
  String.raw`\b(?:darme|darse|denme|deme|dame|me doy) de baja\b`,
  String.raw`\bno (?:quiero|deseo) (?:recibir (?:mas|mensajes|correos|emails|publicidad|informacion|promociones|ofertas)|mas (?:mensajes|correos|emails|publicidad))\b`,
  String.raw`\bno (?:me )?(?:envies|envien|enviar|mandes|manden|escribas|escriban|contactes|contacten|llames|llamen|molesten|molestes) mas\b`,
  String.raw`\b(?:deja|dejen|dejad|para|paren|pare) de (?:enviarme|escribirme|mandarme|contactarme|llamarme|molestarme)\b`,
  String.raw`\b(?:eliminame|sacame|quitame|borrame|eliminenme|saquenme|quitenme|borrenme|sacadme|quitadme|borradme) de (?:la|su|tu|esta|esa|vuestra|sus|tus) (?:lista|listas|base de datos)\b`,
  String.raw`\b(?:eliminarme|sacarme|quitarme|borrarme) de (?:la|su|tu|esta|esa|vuestra|sus|tus) (?:lista|listas|base de datos)\b`,
  String.raw`\b(?:eliminen|borren|quiten|saquen|elimina|borra|quita|saca) mi (?:numero|correo|contacto|email|telefono) (?:de (?:la|su|tu|esta|esa|sus|tus) (?:lista|listas|base de datos)\b|$)`,
  String.raw`\bcancelar (?:mi )?suscripcion\b(?! (?:en|al|para)\b)`,
  String.raw`\bdesuscribir(?:me)?\b`,
  String.raw`\bno mas (?:mensajes|correos|emails|publicidad|spam)\b`,
].map((p) => new RegExp(NOT_NEGATED + p));

/** Sentence punctuation and line breaks: clause boundaries (a hyphen inside a word is not one). */
const CLAUSE_BREAK = /[.,!?;:¡¿…\n\r]+|\s[-–—]+\s/u;

/** The standard signature separator line (RFC 3676 "-- "), and mobile footers. */
const SIGNATURE_SEPARATOR = /^--\s?$/;
const MOBILE_FOOTER = /^(sent from my|sent from (outlook|yahoo|mail)|get outlook for|enviado (do|de|desde) (meu|mi|o)|enviado pelo|obtener outlook para|obter o outlook para)\b/;

/** A line that is only a sign-off ("Best,", "Atenciosamente", "Un saludo"): the signature follows. */
const SIGN_OFFS = new Set([
  'best',
  'best regards',
  'kind regards',
  'regards',
  'thanks',
  'thank you',
  'many thanks',
  'cheers',
  'sincerely',
  'br',
  'atenciosamente',
  'att',
  'abs',
  'abraco',
  'abracos',
  'um abraco',
  'obrigado',
  'obrigada',
  'cordialmente',
  'saludos',
  'un saludo',
  'atentamente',
  'gracias',
  'muchas gracias',
]);

/**
 * The new text only: quoted text dropped, then a signature (from a `-- ` line, or from a sign-off
 * line that is not the first line) and trailing mobile footers.
 */
function newTextOf(text: string): string {
  const lines = stripQuotedText(text).split('\n');
  const separator = lines.findIndex((l, i) => SIGNATURE_SEPARATOR.test(l.trimEnd()) || (i > 0 && SIGN_OFFS.has(wordsOf(l).join(' '))));
  const kept = separator >= 0 ? lines.slice(0, separator) : lines;
  while (kept.length > 0 && (kept[kept.length - 1]!.trim() === '' || MOBILE_FOOTER.test(normalizeText(kept[kept.length - 1]!)))) kept.pop();
  return kept.join('\n');
}

/** A clause's words: normalised, every symbol and emoji a space, apostrophes kept inside words. */
function wordsOf(clause: string): string[] {
  const flat = normalizeText(clause)
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .replace(/(^|\s)'+|'+(?=\s|$)/g, '$1')
    .trim();
  return flat === '' ? [] : flat.split(/\s+/);
}

function startsWith(words: string[], phrase: string[]): boolean {
  return phrase.length <= words.length && phrase.every((w, i) => words[i] === w);
}

function endsWith(words: string[], phrase: string[]): boolean {
  const offset = words.length - phrase.length;
  return offset >= 0 && phrase.every((w, i) => words[offset + i] === w);
}

/** The clause without courtesy at either end; repeated words folded ("stop stop stop" → "stop"). */
function coreOf(words: string[]): string {
  if (words.length === 1 && BARE_REFUSALS.has(words[0]!)) return '';
  let core = words;
  for (let changed = true; changed && core.length > 0;) {
    changed = false;
    for (const phrase of COURTESY_PHRASES) {
      if (startsWith(core, phrase)) core = core.slice(phrase.length);
      else if (endsWith(core, phrase)) core = core.slice(0, core.length - phrase.length);
      else continue;
      changed = true;
      break;
    }
  }
  return core.filter((w, i) => w !== core[i - 1]).join(' ');
}

/**
 * The shared opt-out phrase rule (seed 003 §4.7 "The phrase rule", extended to carrier keywords,
 * Portuguese and Spanish; used by messaging on every inbound message and by outreach on replies).
 * See the module comment for how a message is read.
 *
 * @param text the inbound message's text, as received (quotes and signature included)
 * @returns true when the message asks to stop being contacted; false for null, empty, or text that
 *   merely contains a command word ("I can't stop laughing", "the end of the month")
 */
export function isOptOut(text: string | null | undefined): boolean {
  if (!text) return false;
  // NFKC first: full-width and other compatibility forms ("ＳＴＯＰ") read as their plain letters.
  const clauses = newTextOf(text.normalize('NFKC'))
    .split(CLAUSE_BREAK)
    .map(wordsOf)
    .filter((words) => words.length > 0);
  if (clauses.length === 0) return false;
  if (clauses.some((words) => CONTAINED_OPT_OUTS.some((p) => p.test(words.join(' '))))) return true;
  const cores = clauses.map(coreOf).filter((core) => core !== '');
  return cores.length > 0 && cores.every((core) => STOP_COMMANDS.has(core));
}
