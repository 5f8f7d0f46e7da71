import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { getMetadataStorage } from 'class-validator';
import { IsInt, IsOptional } from '@touchpoint/config';

/**
 * Every config class (libs/config and each `*.config.ts` of apps/ and scripts/; STYLE "Config":
 * bad config stops start-up with the variable's name) validates every variable it declares, and
 * a variable whose default is a boolean is checked as one.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** `*.config.ts` under `dir`, recursively. */
function configFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.config.ts') && !entry.parentPath.includes('node_modules'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

const FILES = ['libs/config/src/index.ts', ...configFiles('apps'), ...configFiles('scripts')];

type ConfigClass = new () => object;

/** The exported classes of a config file whose instances have UPPER_CASE properties (the variables). */
async function configClassesOf(file: string): Promise<[string, ConfigClass][]> {
  const module = (await import(pathToFileURL(path.join(ROOT, file)).href)) as Record<string, unknown>;
  return Object.entries(module)
    .filter((entry): entry is [string, ConfigClass] => typeof entry[1] === 'function' && /^class\b/.test(Function.prototype.toString.call(entry[1])))
    .filter(([, cls]) => variablesOf(cls).length > 0);
}

function variablesOf(cls: ConfigClass): string[] {
  return Object.keys(new cls()).filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name));
}

/** The validators of `cls` (inherited ones included) by property; `@IsOptional()` alone validates nothing. */
function validatorsOf(cls: ConfigClass): Map<string, string[]> {
  const byProperty = new Map<string, string[]>();
  for (const meta of getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false)) {
    if (meta.type === 'conditionalValidation') continue;
    const name = meta.name ?? meta.type;
    byProperty.set(meta.propertyName, [...(byProperty.get(meta.propertyName) ?? []), name]);
  }
  return byProperty;
}

/** Variables of `cls` without a validator, and boolean ones without `@IsBoolean()`. */
function gapsOf(cls: ConfigClass): string[] {
  const validators = validatorsOf(cls);
  const defaults = new cls() as Record<string, unknown>;
  return variablesOf(cls).flatMap((name) => {
    const own = validators.get(name) ?? [];
    if (own.length === 0) return [`${name}: no validator`];
    if (typeof defaults[name] === 'boolean' && !own.includes('isBoolean')) return [`${name}: a boolean without @IsBoolean()`];
    return [];
  });
}

describe('config classes', () => {
  let classes: [string, ConfigClass][];

  beforeAll(async () => {
    classes = (await Promise.all(FILES.map(async (file) => (await configClassesOf(file)).map(([name, cls]) => [`${file} ${name}`, cls] as [string, ConfigClass])))).flat();
  });

  it('finds the config class of every service, the sandbox, the CLI and npm start', () => {
    const names = classes.map(([label]) => label.split(' ')[1]);
    expect(names).toEqual(expect.arrayContaining(['BaseConfig', 'ServiceConfig', 'GatewayConfig', 'FollowupsConfig', 'OutreachConfig', 'MessagingConfig', 'OutboxDispatcherConfig', 'AbuseConfig', 'AiGatewayConfig', 'SandboxConfig', 'CliConfig', 'StartConfig']));
  });

  it('validates every variable of every config class (and checks booleans as booleans)', () => {
    const gaps = classes.flatMap(([label, cls]) => gapsOf(cls).map((gap) => `${label}: ${gap}`));
    expect(gaps).toEqual([]);
  });

  it('would report a variable without a validator, an optional one with nothing else, and an unchecked boolean', () => {
    class Incomplete {
      @IsInt()
      CHECKED = 1;

      UNCHECKED = 'x';

      @IsOptional()
      ONLY_OPTIONAL?: string = undefined;

      @IsInt()
      SWITCH = true;
    }
    expect(gapsOf(Incomplete)).toEqual(['UNCHECKED: no validator', 'ONLY_OPTIONAL: no validator', 'SWITCH: a boolean without @IsBoolean()']);
  });
});

describe('start-up with a misspelt boolean', () => {
  it('refuses to start, naming the variable, with exit code 1', async () => {
    const child = spawn(process.execPath, ['--import', '@swc-node/register/esm-register', 'apps/followups/src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, FOLLOWUP_RELEASE_ENABLED: 'flase', LOG_LEVEL: 'silent', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('followups: invalid configuration: FOLLOWUP_RELEASE_ENABLED="flase": must be one of true, false, 1, 0, yes, no');
  }, 60_000);
});
