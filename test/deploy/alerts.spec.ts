import { load } from 'js-yaml';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Every alert in deploy/prometheus/alerts.yml has a `promtool test rules` case in alerts.test.yml
 * (it fires on its first event and stays quiet on a healthy series), and the cases pass. promtool
 * comes with Debian's `prometheus` package; `.ci/run` installs it, and sets
 * TOUCHPOINT_REQUIRE_PROMTOOL=1 so that CI fails rather than skips when it is missing. On a
 * developer machine without it the promtool cases say so and do not run.
 */
const rulesDir = path.resolve('deploy/prometheus');
const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0 ? 'promtool' : null;
const required = process.env.TOUCHPOINT_REQUIRE_PROMTOOL === '1' || process.env.CI === 'true';

describe('deploy/prometheus alert rules under promtool', () => {
  beforeAll(() => {
    if (!promtool && !required) {
      process.stderr.write('\nalerts.spec: promtool is not installed, so the alert unit tests DID NOT RUN (apt-get install -y prometheus; .ci/run installs it)\n');
    }
  });

  it('promtool is installed where it is required (CI)', () => {
    expect({ promtool: promtool !== null || !required }).toEqual({ promtool: true });
  });

  it('every alert of alerts.yml has a case in alerts.test.yml', () => {
    const read = <T>(file: string) => load(readFileSync(path.join(rulesDir, file), 'utf8')) as T;
    const alerts: string[] = read<{ groups: { rules: { alert: string }[] }[] }>('alerts.yml').groups.flatMap((g) => g.rules.map((r) => r.alert));
    const cases = read<{ tests: { alert_rule_test: { alertname: string; exp_alerts?: unknown[] }[] }[] }>('alerts.test.yml').tests.flatMap((t) => t.alert_rule_test);
    for (const alert of alerts) {
      const mine = cases.filter((c: { alertname: string }) => c.alertname === alert);
      // One evaluation where it fires and one where it stays quiet.
      expect({ alert, fires: mine.some((c: { exp_alerts?: unknown[] }) => (c.exp_alerts ?? []).length > 0), quiet: mine.some((c: { exp_alerts?: unknown[] }) => (c.exp_alerts ?? []).length === 0) }).toEqual({ alert, fires: true, quiet: true });
    }
  });

  it('promtool accepts the rules and every unit test passes (or says it did not run)', () => {
    if (!promtool) {
      expect(required).toBe(false);
      return;
    }
    execFileSync(promtool, ['check', 'rules', 'alerts.yml'], { cwd: rulesDir, encoding: 'utf8', stdio: 'pipe' });
    const run = spawnSync(promtool, ['test', 'rules', 'alerts.test.yml'], { cwd: rulesDir, encoding: 'utf8' });
    expect({ status: run.status, output: `${run.stdout}${run.stderr}` }).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });
});
