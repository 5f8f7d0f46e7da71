import { truncateText } from '@touchpoint/text';
import { askedFields, fieldsOf, sectionOf } from './model-prompt.js';

/**
 * The sandbox model's deterministic answers (DESIGN §7): each task answers from the prompt alone, in
 * the JSON shape the prompt asks for, so callers can be tested end to end without a real model.
 */

/** Words too common to decide a class. */
const STOP_WORDS = new Set(['the', 'and', 'for', 'you', 'your', 'with', 'are', 'was', 'but', 'has', 'have', 'this', 'that', 'from', 'about', 'asks', 'wants']);
/** Class ids that mean "nothing else fits" (en, pt, es). */
const CATCH_ALL_CLASSES = ['other', 'others', 'unknown', 'none', 'outro', 'outros', 'otro'];
/** Days a sandbox decision suggests until the next check. */
const SANDBOX_FOLLOWUP_DAYS = 3;

type Answer = Record<string, unknown>;

/** Answers one chat-completions request from its system and user messages. */
export function answerPrompt(system: string, user: string): Answer {
  const answer = answerTask(taskOf(user), user);
  // Fill any further field the caller required, so a caller's own schema still gets its shape.
  for (const field of askedFields(system)) {
    if (field.required && (answer[field.name] === undefined || answer[field.name] === null)) answer[field.name] = placeholderOf(field.type, field.name);
  }
  return answer;
}

/** The task named in the prompt, or empty. */
export function taskOf(user: string): string {
  return /<task>([a-z_]+)<\/task>/.exec(user)?.[1] ?? '';
}

function answerTask(task: string, user: string): Answer {
  switch (task) {
    case 'followup_classify':
      return classify(user);
    case 'followup_message': {
      const name = fieldsOf(sectionOf(user, 'contact')).name;
      return { body: `${greeting(name)} ${sentence(sectionOf(user, 'objective'))}`, confidence: 0.8 };
    }
    case 'outreach_decide':
      return decide(user);
    case 'outreach_draft_email': {
      const draft = fieldsOf(sectionOf(user, 'draft'));
      const objective = sentence(sectionOf(user, 'objective'));
      const body = `${greeting(personName(user))}\n\n${objective}\n\nWould a 20 minute call next week work for you?`;
      return draft.is_reply === 'true' ? { body } : { subject: subjectOf(objective), body };
    }
    case 'outreach_draft_linkedin': {
      const draft = fieldsOf(sectionOf(user, 'draft'));
      const text = `${greeting(personName(user))} ${sentence(sectionOf(user, 'objective'))}`;
      return draft.type === 'linkedin_connection' ? { note: truncateText(text, 200) } : { body: truncateText(text, 1000) };
    }
    case 'conversation_summary':
      return summarise(user);
    case 'promise_resume': {
      const promise = sectionOf(user, 'promise').split('\n')[0] ?? '';
      const name = fieldsOf(sectionOf(user, 'contact')).name;
      return { body: `${greeting(name)} as promised, I am getting back to you about: ${promise.trim()}. Shall we pick it up from here?` };
    }
    default:
      return { answer: 'sandbox model: unknown task' };
  }
}

/** Picks the class with the most of its words (id and description) present in the reply. */
function classify(user: string): Answer {
  const reply = new Set(wordsOf(sectionOf(user, 'reply')));
  const classes = sectionOf(user, 'classes')
    .split('\n')
    .map((line) => /^- ([^:]+):\s?(.*)$/.exec(line.trim()))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ id: m[1]!.trim(), words: new Set(wordsOf(`${m[1]} ${m[2]}`)) }));
  let best: { id: string; score: number } | undefined;
  for (const c of classes) {
    const score = [...c.words].filter((w) => reply.has(w)).length;
    if (score > 0 && (!best || score > best.score)) best = { id: c.id, score };
  }
  if (best) return { class: best.id, confidence: 0.9, rationale: `The reply uses words of "${best.id}".` };
  const fallback = classes.find((c) => CATCH_ALL_CLASSES.includes(c.id.toLowerCase())) ?? classes[classes.length - 1];
  return { class: fallback?.id ?? 'unknown', confidence: 0.2, rationale: 'No class words occur in the reply.' };
}

/**
 * Fresh enrollment → the first outbound action (email first); a reply → an email answer; a rejected
 * draft (trigger draft_rejected) → the same kind of touch again, citing the reviewer's reason; otherwise wait.
 */
function decide(user: string): Answer {
  const allowed = sectionOf(user, 'allowed_actions')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const thread = sectionOf(user, 'thread');
  const history = sectionOf(user, 'history');
  const newest = thread.split('\n')[0] ?? '';
  const pick = (...types: string[]) => types.find((t) => allowed.includes(t));
  if (/\binbound:/.test(newest) && allowed.includes('email')) {
    const asked = truncateText(newest.replace(/^.*?\binbound:\s*/, ''), 80);
    return action('email', `The newest reply asks: "${asked}".`, `Answer the newest reply in one short paragraph and offer a call.`);
  }
  if (/^reason: draft_rejected$/m.test(sectionOf(user, 'trigger'))) {
    // The reviewer rejected the last draft and asked for another (seed 003 §4.5): write it again, as
    // the same kind of touch when that is still allowed, following the reviewer's reason.
    const rejected = /\baction ([a-z_]+) rejected reject_reason: (.*?) \(then [a-z_]+\)$/m.exec(history);
    const again = pick(rejected?.[1] ?? '', 'email', 'linkedin_message', 'linkedin_connection');
    if (again) {
      const reason = rejected && rejected[2] !== '-' ? truncateText(rejected[2]!.trim(), 120) : '';
      return action(
        again,
        reason ? `The reviewer rejected the last draft: "${reason}".` : 'The reviewer rejected the last draft without a reason.',
        reason ? `Write the ${again.replace('_', ' ')} to ${personName(user)} again, as the reviewer asked: ${sentence(reason)}` : `Write the ${again.replace('_', ' ')} to ${personName(user)} again, differently, and ask for a short call.`,
      );
    }
  }
  if (thread === '' && history === '') {
    const first = pick('email', 'linkedin_connection', 'linkedin_message');
    if (first) return action(first, 'The enrollment is fresh: no thread and no history yet.', `Introduce the campaign offer to ${personName(user)} and ask for a short call.`);
  }
  if (allowed.includes('wait')) return { type: 'wait', rationale: 'An earlier touch is still waiting for an answer.', goal_met: false, suggested_followup_days: SANDBOX_FOLLOWUP_DAYS };
  return { type: pick('stop') ?? allowed[0] ?? 'stop', rationale: 'Nothing else is allowed.', goal_met: false };
}

function action(type: string, rationale: string, objective: string): Answer {
  return { type, rationale, objective, goal_met: false, suggested_followup_days: SANDBOX_FOLLOWUP_DAYS };
}

function summarise(user: string): Answer {
  const lines = sectionOf(user, 'messages').split('\n').filter(Boolean);
  const inbound = lines.filter((l) => /\binbound:/.test(l));
  const text = (l: string | undefined) => truncateText((l ?? '').replace(/^.*?\b(inbound|outbound):\s*/, ''), 120);
  const parts = [`The contact sent ${inbound.length} message(s) and the team ${lines.length - inbound.length}.`];
  if (inbound[0]) parts.push(`The contact first wrote: "${text(inbound[0])}".`);
  if (lines.length) parts.push(`The last message was: "${text(lines[lines.length - 1])}".`);
  return { summary: parts.join(' '), open_items: [] };
}

function wordsOf(text: string): string[] {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 3 && !STOP_WORDS.has(w));
}

function personName(user: string): string {
  return fieldsOf(sectionOf(user, 'person')).name ?? 'there';
}

function greeting(name: string | undefined): string {
  return `Hi ${name?.trim() || 'there'},`;
}

function sentence(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t === '' ? '' : /[.!?]$/.test(t) ? t : `${t}.`;
}

function subjectOf(objective: string): string {
  return objective
    .replace(/[.!?]$/, '')
    .split(' ')
    .slice(0, 6)
    .join(' ');
}

function placeholderOf(type: string, name: string): unknown {
  switch (type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return `sandbox ${name}`;
  }
}
