/**
 * Graph error bodies the Meta sandbox answers with (shape of fixtures/meta/error-*.json), by code.
 * Messages follow Meta's error-code page; unknown codes get a generic one.
 */
const MESSAGES: Record<number, string> = {
  2: 'Service temporarily unavailable',
  4: 'Application request limit reached',
  100: 'Invalid parameter',
  190: 'Invalid OAuth access token.',
  368: 'Temporarily blocked for policies violations',
  80007: 'Rate limit issues',
  130429: 'Rate limit hit',
  130497: 'Business account is restricted from messaging users in this country',
  131000: 'Something went wrong',
  131008: 'Required parameter is missing',
  131016: 'Service unavailable',
  131026: 'Message undeliverable',
  131031: 'Account has been locked',
  131047: 'Re-engagement message',
  131048: 'Spam rate limit hit',
  131056: '(Business Account, Consumer Account) pair rate limit hit',
  131057: 'Account in maintenance mode',
  131064: 'Quality messaging limit reached',
  132018: 'There was an issue with the parameters in your template.',
  133004: 'Server temporarily unavailable',
};

/** The HTTP status Graph uses for a code when a fault does not say. */
export function defaultStatusOf(code: number | undefined): number {
  if (code === undefined) return 500;
  if ([2, 131000, 131016, 133004].includes(code)) return 503;
  if (code === 190) return 401;
  return 400;
}

/** A Graph error body for `code` (fixtures/meta/error-130429.json), with `error_subcode` when given. */
export function graphError(code: number, message?: string, details?: string, subcode?: number): Record<string, unknown> {
  const text = message ?? MESSAGES[code] ?? 'Unknown error';
  return {
    error: {
      message: `(#${code}) ${text}`,
      type: 'OAuthException',
      code,
      error_data: { messaging_product: 'whatsapp', details: details ?? text },
      ...(subcode !== undefined ? { error_subcode: subcode } : {}),
      fbtrace_id: `Sandbox${Math.random().toString(36).slice(2, 14)}`,
    },
  };
}

/** Graph's answer to an expired access token: 401, code 190, subcode 463 (Graph's error-handling guide). */
export function graphExpiredToken(): Record<string, unknown> {
  return {
    error: {
      message: 'Error validating access token: Session has expired.',
      type: 'OAuthException',
      code: 190,
      error_subcode: 463,
      error_data: { messaging_product: 'whatsapp', details: 'The access token has expired; generate a new one.' },
      fbtrace_id: `Sandbox${Math.random().toString(36).slice(2, 14)}`,
    },
  };
}

/**
 * Graph's answer to a read of an object the token cannot see: the same body whether the id does not
 * exist or belongs to a business the token has no permission on (code 100, subcode 33).
 */
export function graphObjectNotReadable(id: string): Record<string, unknown> {
  return {
    error: {
      message: `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
      type: 'GraphMethodException',
      code: 100,
      error_subcode: 33,
      fbtrace_id: `Sandbox${Math.random().toString(36).slice(2, 14)}`,
    },
  };
}

/** Graph's answer to a token it does not recognise (code 190, OAuthException). */
export function graphInvalidToken(): Record<string, unknown> {
  return { error: { message: 'Invalid OAuth access token - Cannot parse access token', type: 'OAuthException', code: 190, fbtrace_id: `Sandbox${Math.random().toString(36).slice(2, 14)}` } };
}

/** A wamid-looking id, unique within the sandbox process. */
export function makeWamid(seq: number, to: string): string {
  return `wamid.${Buffer.from(`sandbox:${process.pid}:${seq}:${to}`).toString('base64')}`;
}

/** Problems with a `/messages` body, Graph-style (code 100); empty when acceptable. */
export function messageBodyProblems(body: unknown): string[] {
  if (!body || typeof body !== 'object') return ['the body must be a JSON object'];
  const b = body as Record<string, unknown>;
  if (b.messaging_product !== 'whatsapp') return ['messaging_product must be whatsapp'];
  if (b.status === 'read') return typeof b.message_id === 'string' && b.message_id ? [] : ['message_id is required'];
  const problems: string[] = [];
  if (typeof b.to !== 'string' || !/\d{6,}/.test(b.to.replace(/\D/g, ''))) problems.push('to must be a phone number');
  const type = typeof b.type === 'string' ? b.type : 'text';
  if (!['text', 'template', 'image', 'document', 'audio', 'video', 'interactive', 'sticker', 'location', 'contacts', 'reaction'].includes(type)) problems.push(`unsupported type ${type}`);
  else if (!b[type] || typeof b[type] !== 'object') problems.push(`${type} object is required`);
  if (typeof b.biz_opaque_callback_data === 'string' && b.biz_opaque_callback_data.length > 512) problems.push('biz_opaque_callback_data is longer than 512 characters');
  // Contextual replies: `context.message_id` names the quoted wamid; a reaction cannot be one.
  if (b.context !== undefined) {
    const context = b.context as Record<string, unknown> | null;
    if (!context || typeof context !== 'object' || typeof context.message_id !== 'string' || context.message_id === '') problems.push('context.message_id must be a message id');
    else if (type === 'reaction') problems.push('a reaction cannot be a contextual reply');
  }
  if (type === 'template' && b.template && typeof b.template === 'object') problems.push(...templateProblems((b.template as { components?: unknown }).components));
  return problems;
}

/** Graph's checks of template components that the dispatcher must match: buttons need a sub_type and an index. */
function templateProblems(components: unknown, where = 'template.components'): string[] {
  if (components === undefined) return [];
  if (!Array.isArray(components)) return [`${where} must be an array`];
  const problems: string[] = [];
  components.forEach((c: Record<string, unknown>, i) => {
    if (!c || typeof c !== 'object') return void problems.push(`${where}[${i}] must be an object`);
    if (c.type === 'button') {
      if (typeof c.sub_type !== 'string') problems.push(`${where}[${i}]: button sub_type is required`);
      if (c.index === undefined || !/^\d$/.test(String(c.index))) problems.push(`${where}[${i}]: button index is required`);
    }
    if (c.type === 'carousel') {
      if (!Array.isArray(c.cards) || c.cards.length === 0) problems.push(`${where}[${i}]: carousel cards are required`);
      else (c.cards as Record<string, unknown>[]).forEach((card, k) => problems.push(...templateProblems(card?.components, `${where}[${i}].cards[${k}].components`)));
    }
  });
  return problems;
}

/**
 * Meta's refusal of a template's text parameters, as Graph answers it (HTTP 400): 131008 for an
 * empty value, 132018 for one holding a newline, a tab or more than 4 spaces in a row; null when
 * every text parameter passes. Carousel cards' parameters count too.
 */
export function templateParameterRefusal(body: unknown): { code: 131008 | 132018; details: string } | null {
  const b = body as { type?: unknown; template?: { components?: unknown } } | null;
  if (!b || b.type !== 'template' || !b.template || typeof b.template !== 'object') return null;
  return componentsRefusal(b.template.components);
}

function componentsRefusal(components: unknown): { code: 131008 | 132018; details: string } | null {
  if (!Array.isArray(components)) return null;
  for (const c of components as { parameters?: unknown; cards?: { components?: unknown }[] }[]) {
    for (const p of Array.isArray(c?.parameters) ? (c.parameters as { type?: unknown; text?: unknown }[]) : []) {
      if (p?.type !== 'text' || typeof p.text !== 'string') continue;
      if (p.text.trim() === '') return { code: 131008, details: 'body: a text parameter is empty' };
      if (/[\n\r\t]/.test(p.text) || / {5,}/.test(p.text)) return { code: 132018, details: 'Param text cannot have new-line/tab characters or more than 4 consecutive spaces' };
    }
    for (const card of Array.isArray(c?.cards) ? c.cards : []) {
      const refusal = componentsRefusal(card?.components);
      if (refusal) return refusal;
    }
  }
  return null;
}
