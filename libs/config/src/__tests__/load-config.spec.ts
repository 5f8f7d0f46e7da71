import { ConfigError, loadConfig, ServiceConfig } from '../index.js';

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
});
