/**
 * Gateway contracts (DESIGN §3): API key scopes and member roles. The gateway holds the tenancy
 * tables (organizations, members, api_keys) and answers no RPC of its own besides the platform's.
 */

/** Scopes an API key can carry (DESIGN §3; the `agents:*` pair guards the seed-002 routes). */
export const API_SCOPES = ['agents:read', 'agents:write', 'outreach:read', 'outreach:write', 'messaging:read', 'messaging:write', 'crm:write', 'admin'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/** Named scopes, for decorators and checks (`Scope.AgentsRead` rather than a string literal). */
export const Scope = {
  AgentsRead: 'agents:read',
  AgentsWrite: 'agents:write',
  OutreachRead: 'outreach:read',
  OutreachWrite: 'outreach:write',
  MessagingRead: 'messaging:read',
  MessagingWrite: 'messaging:write',
  /** A CRM pushing lead and deal events (`POST /crm/events`). */
  CrmWrite: 'crm:write',
  Admin: 'admin',
} as const satisfies Record<string, ApiScope>;

/** Roles of a member of an organization (DESIGN §3; seed 002 "Administrador" / "Operador"). */
export const MEMBER_ROLES = ['admin', 'operator'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

/** Prefix of every API key secret, so a leaked one is easy to recognise (and to scan for). */
export const API_KEY_SECRET_PREFIX = 'tp_';
