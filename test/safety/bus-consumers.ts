import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as contracts from '@touchpoint/contracts';

/** One message type declared in libs/contracts: where it is declared and its name. */
export interface DeclaredMessage {
  type: string;
  /** `MessagingEvents.SuppressionRequested`. */
  declaredAs: string;
}

/**
 * Every event, command and wake-up type libs/contracts declares: the values of its exported
 * `*Events`, `*Commands` and `*Wakeups` objects (DESIGN §2 names; RPC patterns are request/reply,
 * answered by the service that owns them, and are not messages on the topic exchange).
 */
export function declaredMessages(): DeclaredMessage[] {
  const out: DeclaredMessage[] = [];
  for (const [exported, value] of Object.entries(contracts)) {
    if (!/(Events|Commands|Wakeups)$/.test(exported) || !value || typeof value !== 'object') continue;
    for (const [key, type] of Object.entries(value as Record<string, unknown>)) if (typeof type === 'string') out.push({ type, declaredAs: `${exported}.${key}` });
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === '__tests__' || entry.name === 'node_modules') continue;
      out.push(...sourceFiles(full));
    } else if (entry.name.endsWith('.ts') && !/\.(spec|e2e-spec)\.ts$/.test(entry.name)) out.push(full);
  }
  return out;
}

/** One bus handler found in the services' source. */
export interface BusConsumer {
  type: string;
  /** `apps/followups/src/stop-paths/stop-paths.consumer.ts`. */
  file: string;
}

/**
 * The message types the services handle, read from their source the way libs/runtime wires them:
 * each `@OnBusMessage(<type>)` (libs/bus decorators; `BusService` registers every decorated method)
 * and each direct `addHandler(<type>, …)`. `<type>` is a string literal or a `Group.Key` of
 * libs/contracts. Only `apps/*` counts: a handler in a test or a test stand-in consumes nothing in
 * production. An argument this reader cannot resolve (a local constant) is returned as `unresolved`.
 */
export function busConsumers(root: string): { consumers: BusConsumer[]; unresolved: Array<{ expression: string; file: string }> } {
  const consumers: BusConsumer[] = [];
  const unresolved: Array<{ expression: string; file: string }> = [];
  const groups = contracts as unknown as Record<string, Record<string, unknown>>;
  for (const file of sourceFiles(path.join(root, 'apps'))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:@OnBusMessage|\.addHandler)\(\s*([^,)]+)/g)) {
      const expression = match[1]!.trim();
      const relative = path.relative(root, file);
      const literal = /^['"`]([^'"`]+)['"`]$/.exec(expression);
      const member = /^([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*)$/.exec(expression);
      const type = literal ? literal[1] : member ? groups[member[1]!]?.[member[2]!] : undefined;
      if (typeof type === 'string') consumers.push({ type, file: relative });
      else unresolved.push({ expression, file: relative });
    }
  }
  return { consumers, unresolved };
}
