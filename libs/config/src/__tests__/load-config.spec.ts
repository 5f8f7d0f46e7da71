import { ConfigError, IsBoolean, IsString, loadConfig, parseBoolean, Secret, ServiceConfig } from '../index.js';

class WithSwitch extends ServiceConfig {
  @IsBoolean()
  FEATURE_ENABLED = true;
}

class WithSecrets extends ServiceConfig {
  @IsString()
  @Secret()
  SIGNING_SECRET = 'public-default';

  @IsString()
  @Secret()
  OTHER_SECRET = 'another-public-default';

  @IsString()
  NOT_SECRET = 'plain';

  /** Used only when FEATURE is on. */
  @IsString()
  @Secret((config: WithSecrets) => config.FEATURE === 'off')
  FEATURE_KEY = 'feature-default';

  @IsString()
  FEATURE = 'on';
}

describe(loadConfig.name, () => {
  it('uses the defaults when nothing is set', () => {
    const sut = loadConfig(ServiceConfig, {});
    expect(sut).toMatchObject({ BUS_NAMESPACE: 'tp', RPC_TIMEOUT_MS: 5000, BUS_MAX_ATTEMPTS: 5, BUS_QUEUE_TYPE: 'quorum' });
  });

  it('names only the type problem of a value of the wrong type, and the range problem of a number out of range', () => {
    const messageOf = (env: Record<string, string>) => {
      try {
        loadConfig(ServiceConfig, env);
      } catch (err) {
        return (err as ConfigError).message;
      }
      throw new Error('expected a ConfigError');
    };
    const wrongType = messageOf({ RPC_TIMEOUT_MS: 'soon' });
    expect(wrongType).toContain('RPC_TIMEOUT_MS="soon": ');
    expect(wrongType).not.toMatch(/less than|greater than/);
    expect(messageOf({ RPC_TIMEOUT_MS: '5' })).toMatch(/RPC_TIMEOUT_MS=5: .*less than/);
  });

  it('converts numbers from the environment', () => {
    expect(loadConfig(ServiceConfig, { RPC_TIMEOUT_MS: '1500', PORT: '0' })).toMatchObject({ RPC_TIMEOUT_MS: 1500, PORT: 0 });
  });

  it.each([
    ['DATABASE_URL', 'mysql://x'],
    ['AMQP_URL', 'http://broker'],
    ['RPC_TIMEOUT_MS', 'soon'],
    ['RPC_TIMEOUT_MS', '5'],
    ['BUS_NAMESPACE', 'Has Spaces'],
    ['LOG_LEVEL', 'loud'],
    ['BUS_QUEUE_TYPE', 'stream'],
    ['PORT', '70000'],
  ])('stops with a ConfigError naming %s when it is %p', (name, value) => {
    let caught: unknown;
    try {
      loadConfig(ServiceConfig, { [name]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variables).toEqual([name]);
    expect((caught as ConfigError).message).toContain(name);
  });

  describe('booleans', () => {
    it.each([
      ['true', true],
      ['TRUE', true],
      ['True', true],
      ['1', true],
      ['yes', true],
      ['YES', true],
      [' yes ', true],
      ['false', false],
      ['FALSE', false],
      ['False', false],
      ['0', false],
      ['no', false],
      ['No', false],
      ['false\n', false],
    ])('reads %p as %p', (value, expected) => {
      expect(parseBoolean(value)).toBe(expected);
      expect(loadConfig(WithSwitch, { FEATURE_ENABLED: value }).FEATURE_ENABLED).toBe(expected);
    });

    it.each(['flase', 'ture', 'on', 'off', 'y', 'n', '2', '-1', 'enabled', 'true1', 'null'])('stops with a ConfigError naming the variable when it is %p', (value) => {
      expect(parseBoolean(value)).toBeUndefined();
      let caught: unknown;
      try {
        loadConfig(WithSwitch, { FEATURE_ENABLED: value });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      expect((caught as ConfigError).variables).toEqual(['FEATURE_ENABLED']);
      expect((caught as ConfigError).message).toBe(`invalid configuration: FEATURE_ENABLED=${JSON.stringify(value)}: must be one of true, false, 1, 0, yes, no`);
    });

    it('names a bad boolean beside the other bad variables, in declaration order', () => {
      let caught: unknown;
      try {
        loadConfig(WithSwitch, { FEATURE_ENABLED: 'flase', RPC_TIMEOUT_MS: 'soon' });
      } catch (err) {
        caught = err;
      }
      expect((caught as ConfigError).variables).toEqual(['RPC_TIMEOUT_MS', 'FEATURE_ENABLED']);
    });

    it('keeps the default when the variable is unset or empty', () => {
      expect(loadConfig(WithSwitch, {}).FEATURE_ENABLED).toBe(true);
      expect(loadConfig(WithSwitch, { FEATURE_ENABLED: '' }).FEATURE_ENABLED).toBe(true);
    });
  });

  describe('secrets', () => {
    const failureOf = (env: Record<string, string>) => {
      try {
        loadConfig(WithSecrets, env);
      } catch (err) {
        return err as ConfigError;
      }
      return undefined;
    };

    it('refuses, in production, every secret left at its built-in default, naming each', () => {
      const failure = failureOf({ NODE_ENV: 'production', OTHER_SECRET: 'mine' });
      expect(failure).toBeInstanceOf(ConfigError);
      expect(failure!.variables).toEqual(['SIGNING_SECRET', 'FEATURE_KEY']);
      expect(failure!.message).toContain('SIGNING_SECRET');
      expect(failure!.message).not.toContain('public-default');
    });

    it('starts in production once every secret is set', () => {
      expect(loadConfig(WithSecrets, { NODE_ENV: 'production', SIGNING_SECRET: 'a', OTHER_SECRET: 'b', FEATURE_KEY: 'c' })).toMatchObject({ SIGNING_SECRET: 'a', NOT_SECRET: 'plain' });
    });

    it('lets a secret keep its default in production when its feature is off', () => {
      expect(loadConfig(WithSecrets, { NODE_ENV: 'production', SIGNING_SECRET: 'a', OTHER_SECRET: 'b', FEATURE: 'off' })).toMatchObject({ FEATURE_KEY: 'feature-default' });
    });

    it.each(['development', 'test'])('keeps the defaults outside production (%s)', (nodeEnv) => {
      expect(failureOf({ NODE_ENV: nodeEnv })).toBeUndefined();
    });
  });
});
