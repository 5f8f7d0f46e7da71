/** The services of the platform (DESIGN §4); each owns the Postgres schema of the same name. */
export const SERVICES = ['gateway', 'followups', 'outreach', 'messaging', 'outbox-dispatcher', 'abuse', 'ai-gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** Schema owned by each service (DESIGN §1). */
export const SERVICE_SCHEMA: Record<ServiceName, string> = {
  gateway: 'gateway',
  followups: 'followups',
  outreach: 'outreach',
  messaging: 'messaging',
  'outbox-dispatcher': 'outbox',
  abuse: 'abuse',
  'ai-gateway': 'ai',
};

/** Default HTTP port of each service's health/metrics surface (the gateway's is the public API). */
export const SERVICE_PORT: Record<ServiceName | 'sandbox', number> = {
  gateway: 3000,
  followups: 3101,
  outreach: 3102,
  messaging: 3103,
  'outbox-dispatcher': 3104,
  abuse: 3105,
  'ai-gateway': 3106,
  sandbox: 3900,
};
