import type { DynamicModule } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadAll, YAML11_SCHEMA } from 'js-yaml';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SERVICE_PORT, SERVICES, type ServiceName } from '@touchpoint/contracts';
import { ConfigError, loadConfig, secretsOf, type ServiceConfig } from '@touchpoint/config';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { OutreachConfig } from '../../apps/outreach/src/outreach.config.js';
import { OutreachModule } from '../../apps/outreach/src/outreach.module.js';
import { startSandbox } from '../../apps/sandbox/src/sandbox.app.js';
import { SandboxConfig } from '../../apps/sandbox/src/sandbox.config.js';

/**
 * The deployment manifests must describe the platform as it is: every service
 * deployed, probes on routes a started service really answers, ports equal to the services'
 * defaults, alert rules over metrics the services really export.
 */

/** The platform's health routes (libs/runtime HealthController; the sandbox has the same pair). */
const LIVE = '/health/live';
const READY = '/health/ready';
/** Services whose loops scale out (DESIGN §1: safe in many replicas): they get an autoscaler. */
const WORKERS: ServiceName[] = ['followups', 'outreach', 'outbox-dispatcher', 'messaging'];

type Manifest = { kind?: string; metadata?: { name?: string }; spec?: any; data?: any; stringData?: any; resources?: string[] };

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => path.join(dir, f));
}
/** YAML 1.1 (merge keys `<<:`), as docker compose and kubectl read it. */
const parse = (file: string) => loadAll(readFileSync(file, 'utf8'), { schema: YAML11_SCHEMA }) as Manifest[];

const k8sFiles = yamlFiles('k8s');
const k8s = k8sFiles.flatMap((file) => parse(file).map((doc) => ({ file: path.basename(file), doc })));
// Manifests are checked field by field below; their shape is what the tests assert.
const ofKind = (kind: string): any[] => k8s.filter((m) => m.doc?.kind === kind).map((m) => m.doc);
/** The named object of a kind; fails the test naming it when missing. */
function named(kind: string, name: string) {
  const found = ofKind(kind).find((d) => d.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} named ${name} in k8s/`);
  return found;
}
const deploymentOf = (service: string) => named('Deployment', `touchpoint-${service}`);
const compose = parse('deploy/docker-compose.yml')[0] as { services: Record<string, any> };
const alerts = parse('deploy/prometheus/alerts.yml')[0] as { groups: { name: string; rules: { alert: string; expr: string; labels?: any; annotations?: any; for?: string }[] }[] };

describe('deployment manifests', () => {
  it('parse: every YAML file under k8s/ and deploy/', () => {
    const files = [...k8sFiles, ...yamlFiles('deploy')];
    expect(files.length).toBeGreaterThanOrEqual(12);
    for (const file of files) expect(() => parse(file)).not.toThrow();
  });

  describe('k8s', () => {
    it('has exactly one Deployment and one Service per service, and none for the sandbox', () => {
      const names = (kind: string) =>
        ofKind(kind)
          .map((d) => d.metadata?.name)
          .sort();
      const expected = SERVICES.map((s) => `touchpoint-${s}`).sort();
      expect(names('Deployment')).toEqual(expected);
      expect(names('Service')).toEqual(expected);
    });

    it.each([...SERVICES])('%s: liveness and readiness probe the health routes on the service port', (service) => {
      const deployment = deploymentOf(service);
      const [container] = deployment.spec.template.spec.containers;
      const port = SERVICE_PORT[service];
      expect(container.ports).toEqual([{ name: 'http', containerPort: port }]);
      expect(container.env).toEqual(
        expect.arrayContaining([
          { name: 'SERVICE', value: service },
          { name: 'PORT', value: String(port) },
        ]),
      );
      expect(container.livenessProbe.httpGet).toEqual({ path: LIVE, port: 'http' });
      expect(container.readinessProbe.httpGet).toEqual({ path: READY, port: 'http' });
      expect(container.startupProbe?.httpGet ?? { path: LIVE, port: 'http' }).toEqual({ path: LIVE, port: 'http' });
      expect(deployment.spec.template.metadata.annotations['prometheus.io/port']).toBe(String(port));
      // The selector picks this service's pods only.
      expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
      expect(deployment.spec.selector.matchLabels['app.kubernetes.io/component']).toBe(service);
    });

    it.each([...SERVICES])('%s: the Service targets the http port of the right pods', (service) => {
      const svc = named('Service', `touchpoint-${service}`);
      expect(svc.spec.ports).toEqual([{ name: 'http', port: SERVICE_PORT[service], targetPort: 'http' }]);
      expect(svc.spec.selector).toEqual(deploymentOf(service).spec.selector.matchLabels);
    });

    it.each([...SERVICES])('%s: sets resource requests and limits and reads the shared ConfigMap and Secret', (service) => {
      const [container] = deploymentOf(service).spec.template.spec.containers;
      expect(container.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.stringMatching(/^\d+Mi$/) });
      expect(container.resources.limits).toEqual({ cpu: expect.any(String), memory: expect.stringMatching(/^\d+Mi$/) });
      expect(container.envFrom).toEqual([{ configMapRef: { name: 'touchpoint-config' } }, { secretRef: { name: 'touchpoint-secrets' } }]);
    });

    it('ships the ConfigMap and an example Secret holding the connection URLs', () => {
      expect(ofKind('ConfigMap').map((c) => c.metadata?.name)).toEqual(['touchpoint-config']);
      const [secret] = ofKind('Secret');
      expect(secret.metadata?.name).toBe('touchpoint-secrets');
      expect(Object.keys(secret.stringData)).toEqual(expect.arrayContaining(['DATABASE_URL', 'AMQP_URL']));
      expect(ofKind('ConfigMap')[0].data.HOST).toBe('0.0.0.0');
    });

    it("names the console's public origin, which the gateway behind the TLS ingress cannot see", () => {
      expect(ofKind('ConfigMap')[0].data.CONSOLE_ORIGIN).toMatch(/^https:\/\/[^/\s]+$/);
    });

    it('autoscales exactly the worker services, each pointing at its Deployment', () => {
      const autoscalers = ofKind('HorizontalPodAutoscaler');
      expect(autoscalers.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(WORKERS.map((w) => `touchpoint-${w}`).sort());
      for (const hpa of autoscalers) {
        expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
        expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
        // An autoscaled Deployment leaves replicas to the autoscaler.
        expect(deploymentOf(hpa.spec.scaleTargetRef.name.replace('touchpoint-', '')).spec.replicas).toBeUndefined();
      }
    });

    it('migrates with the admin CLI in a Job', () => {
      const [job] = ofKind('Job');
      const [container] = job.spec.template.spec.containers;
      expect(container.command.slice(0, 5)).toEqual(['npm', 'run', 'cli', '--', 'migrate']);
      expect(job.spec.template.spec.restartPolicy).toBe('Never');
    });

    it('kustomization applies every manifest but the example Secret', () => {
      const [kustomization] = ofKind('Kustomization');
      const applied = k8sFiles.map((f) => path.basename(f)).filter((f) => f !== 'kustomization.yaml' && !f.includes('example'));
      expect([...(kustomization.resources ?? [])].sort()).toEqual(applied.sort());
    });
  });

  describe('docker-compose', () => {
    it('runs postgres, rabbitmq with its management UI, every service and the sandbox', () => {
      expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['postgres', 'rabbitmq', ...SERVICES, 'sandbox']));
      expect(compose.services.rabbitmq.image).toMatch(/^rabbitmq:.*management/);
    });

    it.each([...SERVICES, 'sandbox' as const])('%s: one image, chosen by SERVICE, on its default PORT, health-checked on /health/ready', (service) => {
      const svc = compose.services[service];
      expect(svc.image).toBe('touchpoint:dev');
      expect(svc.build).toEqual({ context: '..', dockerfile: 'deploy/Dockerfile' });
      expect(svc.environment).toMatchObject({ SERVICE: service, PORT: String(SERVICE_PORT[service]), HOST: '0.0.0.0' });
      expect(svc.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${SERVICE_PORT[service]}${READY}`);
    });

    it.each([...SERVICES])('%s: reaches the compose database and broker, after the migration ran', (service) => {
      const svc = compose.services[service];
      expect(svc.environment.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(svc.environment.AMQP_URL).toMatch(/@rabbitmq:5672/);
      expect(svc.depends_on.migrate).toEqual({ condition: 'service_completed_successfully' });
    });

    it('the Dockerfile runs the compiled service named by SERVICE', () => {
      const dockerfile = readFileSync('deploy/Dockerfile', 'utf8');
      expect(dockerfile).toMatch(/^ARG SERVICE=/m);
      expect(dockerfile).toContain('node scripts/build.mjs');
      expect(dockerfile).toContain('dist/apps/${SERVICE}/src/main.js');
    });
  });

  describe('alerts', () => {
    const rules = alerts.groups.flatMap((g) => g.rules);

    it('every rule has a name, an expression, a severity and a summary', () => {
      expect(rules.length).toBeGreaterThanOrEqual(4);
      for (const rule of rules) {
        expect(rule).toMatchObject({ alert: expect.stringMatching(/^Touchpoint[A-Z]\w+$/), expr: expect.any(String), labels: { severity: expect.stringMatching(/^(info|warning|critical)$/) } });
        expect(rule.annotations.summary).toEqual(expect.any(String));
      }
      expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
    });

    it('covers relay lag, dead-lettered messages and a service down', () => {
      const metrics = rules.flatMap((r) => metricNames(r.expr));
      expect(metrics).toEqual(expect.arrayContaining(['touchpoint_bus_relay_lag_seconds', 'touchpoint_bus_dead_lettered_total', 'up']));
    });

    it('names only touchpoint_ metrics (and Prometheus `up`)', () => {
      for (const rule of rules) {
        const names = metricNames(rule.expr);
        expect({ alert: rule.alert, names }).toEqual({ alert: rule.alert, names: expect.arrayContaining([expect.any(String)]) });
        for (const name of names) expect({ alert: rule.alert, name }).toEqual({ alert: rule.alert, name: expect.stringMatching(/^(touchpoint_\w+|up)$/) });
      }
    });
  });
});

/** The config class of each service (libs/config: the only readers of the environment). */
const CONFIG_CLASSES: Record<ServiceName, new () => ServiceConfig> = {
  gateway: GatewayConfig,
  followups: FollowupsConfig,
  outreach: OutreachConfig,
  messaging: MessagingConfig,
  'outbox-dispatcher': OutboxDispatcherConfig,
  abuse: AbuseConfig,
  'ai-gateway': AiGatewayConfig,
};

/** A compose environment as docker compose reads it with nothing exported: `${NAME:-value}` → value. */
function composeEnvironment(service: string): Record<string, string> {
  const env = compose.services[service].environment as Record<string, unknown>;
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, String(value).replace(/\$\{\w+:-([^}]*)\}/g, '$1')]));
}

describe('secrets in production', () => {
  const secretsOfService = SERVICES.map((service) => [service, secretsOf(CONFIG_CLASSES[service])] as const);

  it('the gateway and the dispatcher declare their webhook, token and encryption secrets', () => {
    expect(secretsOf(GatewayConfig)).toEqual(expect.arrayContaining(['META_APP_SECRET', 'META_VERIFY_TOKEN', 'NYLAS_WEBHOOK_SECRET', 'UNIPILE_WEBHOOK_SECRET', 'UNSUBSCRIBE_TOKEN_SECRET']));
    expect(secretsOf(OutboxDispatcherConfig)).toEqual(expect.arrayContaining(['OUTBOX_CREDENTIALS_KEY', 'UNSUBSCRIBE_TOKEN_SECRET']));
  });

  it.each(secretsOfService.filter(([, secrets]) => secrets.length > 0))('%s refuses to start in production with its secrets at their defaults, naming each', (service, secrets) => {
    let caught: unknown;
    try {
      loadConfig(CONFIG_CLASSES[service], { NODE_ENV: 'production' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect([...(caught as ConfigError).variables].sort()).toEqual([...secrets].sort());
    for (const name of secrets) expect((caught as ConfigError).message).toContain(name);
  });

  it('the example Secret lists every secret of every service, and the ConfigMap none', () => {
    const [secret] = ofKind('Secret');
    const all = [...new Set(secretsOfService.flatMap(([, secrets]) => secrets))];
    expect(Object.keys(secret.stringData)).toEqual(expect.arrayContaining(all));
    expect(Object.keys(ofKind('ConfigMap')[0].data).filter((name) => all.includes(name))).toEqual([]);
  });

  it.each([...SERVICES])('%s starts in production from the compose environment (every secret set, none at its default)', (service) => {
    const env = { ...composeEnvironment(service), NODE_ENV: 'production' };
    for (const name of secretsOf(CONFIG_CLASSES[service])) expect({ name, set: name in env }).toEqual({ name, set: true });
    expect(() => loadConfig(CONFIG_CLASSES[service], env)).not.toThrow();
  });

  it('the compose sandbox signs its webhooks with the gateway’s secrets', () => {
    const gateway = composeEnvironment('gateway');
    const sandbox = composeEnvironment('sandbox');
    for (const name of ['META_APP_SECRET', 'NYLAS_WEBHOOK_SECRET', 'UNIPILE_WEBHOOK_SECRET']) expect({ name, value: sandbox[name] }).toEqual({ name, value: gateway[name] });
  });
});

describe('the probed routes on started services', () => {
  let world: TestWorld;
  /** Metric names each started service exports (`# TYPE` lines of /metrics). */
  const exported = new Set<string>();

  const starters: Record<ServiceName, () => Promise<NestFastifyApplication>> = {
    gateway: () => {
      const config = world.config(GatewayConfig);
      return world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    },
    followups: () => world.start(FollowupsModule.forRoot(world.config(FollowupsConfig))),
    outreach: () => world.start(OutreachModule.forRoot(world.config(OutreachConfig))),
    messaging: () => world.start(MessagingModule.forRoot(world.config(MessagingConfig))),
    'outbox-dispatcher': () => world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { OUTBOX_DRAIN_AUTOSTART: 'false' }))),
    abuse: () => world.start(AbuseModule.forRoot(world.config(AbuseConfig))),
    'ai-gateway': () => world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig))),
  };
  const configClasses = CONFIG_CLASSES;

  beforeAll(async () => {
    world = await createTestWorld('manifests');
  });
  afterAll(() => world.close());

  it.each([...SERVICES])('%s answers the k8s probe paths with 200, on its default PORT by default', async (service) => {
    expect(new configClasses[service]().PORT).toBe(SERVICE_PORT[service]);
    const container = deploymentOf(service).spec.template.spec.containers[0];
    const app = await starters[service]();
    const url = await app.getUrl();
    try {
      for (const probe of [container.livenessProbe, container.readinessProbe]) {
        const response = await fetch(`${url}${probe.httpGet.path}`);
        expect({ path: probe.httpGet.path, status: response.status }).toEqual({ path: probe.httpGet.path, status: 200 });
      }
      const metrics = await (await fetch(`${url}/metrics`)).text();
      for (const match of metrics.matchAll(/^# TYPE (\S+) /gm)) exported.add(match[1]);
    } finally {
      await app.close();
    }
  });

  it('the sandbox answers the compose health check paths on its default PORT by default', async () => {
    expect(new SandboxConfig().PORT).toBe(SERVICE_PORT.sandbox);
    const app: { getUrl(): Promise<string>; close(): Promise<void> } = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent' }) as DynamicModule & SandboxConfig);
    try {
      for (const route of [LIVE, READY]) expect((await fetch(`${await app.getUrl()}${route}`)).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('every touchpoint_ metric the alert rules use is exported by a service', () => {
    expect(exported.size).toBeGreaterThan(10);
    const used = alerts.groups
      .flatMap((g) => g.rules)
      .flatMap((r) => metricNames(r.expr))
      .filter((n) => n !== 'up');
    // Histogram series are exported under their base name.
    const missing = used.map((n) => n.replace(/_(bucket|sum|count)$/, '')).filter((n) => !exported.has(n));
    expect(missing).toEqual([]);
  });
});

/** PromQL words that are not metric names. */
const PROMQL_WORDS = new Set(['by', 'without', 'and', 'or', 'unless', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan']);

/** Metric names in a PromQL expression: identifiers outside label matchers, groupings and strings that are not called as functions. */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = [...stripped.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?/g)].filter((m) => !m[2] && !PROMQL_WORDS.has(m[1].toLowerCase())).map((m) => m[1]);
  return [...new Set(names.filter((n) => !/^\d/.test(n)))];
}
