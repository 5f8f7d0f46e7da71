/**
 * Whether an error says the database cannot be reached right now, rather than that the work is
 * wrong: the caller should wait and try again, and the work itself is not at fault.
 * - SQLSTATE 53300 (too many connections), 57P01-57P03 (the server shutting down, crashed, or
 *   starting), class 08 (connection exception), per
 *   https://www.postgresql.org/docs/current/errcodes-appendix.html;
 * - the socket errors of a connection the network cut (ECONNRESET, ECONNREFUSED, EPIPE, ETIMEDOUT,
 *   EHOSTUNREACH, ENETUNREACH) and node-postgres's own words for it ("Connection terminated…",
 *   "timeout exceeded when trying to connect", "Client has encountered a connection error…").
 * Looks through TypeORM's wrapper (`driverError`) too.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; driverError?: { code?: unknown; message?: unknown } } | null | undefined;
  if (!e || typeof e !== 'object') return false;
  for (const candidate of [e, e.driverError]) {
    const code = typeof candidate?.code === 'string' ? candidate.code : undefined;
    if (code && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
    const message = typeof candidate?.message === 'string' ? candidate.message : '';
    if (UNREACHABLE_MESSAGE.test(message)) return true;
  }
  return false;
}

const UNREACHABLE_CODES = new Set(['53300', '57P01', '57P02', '57P03', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** node-postgres's messages for a lost or unobtainable connection (pg and pg-pool). */
const UNREACHABLE_MESSAGE = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|read ECONNRESET|write EPIPE|connect ECONNREFUSED)/;
