import { ChaosOptionError, OPTION_LIMITS, parseOptions } from './main.js';

describe('npm run chaos options', () => {
  it('reads every option, inline or as the next argument', () => {
    const o = parseOptions(['--seed', '1717', '--duration=40', '--replicas', '3', '--fault-rate', '2', '--rate', 'process_kill=0', '--drain', '150', '--verbose'])!;
    expect(o).toMatchObject({ seed: 1717, durationMs: 40_000, replicas: 3, drainTimeoutMs: 150_000, verbose: true });
    expect(o.rates.process_kill).toBe(0);
    expect(o.rates.provider_5xx).toBe(2);
  });

  it('answers null for --help', () => {
    expect(parseOptions(['--help'])).toBeNull();
  });

  it.each([
    [['--duration', 'abc'], /--duration takes a number/],
    [['--duration', ''], /--duration takes a number/],
    [['--seed='], /--seed takes an integer from 0 to 2147483647/],
    [['--seed', ' '], /--seed takes an integer/],
    [['--seed', '1e21'], /--seed takes an integer from 0 to 2147483647/],
    [['--seed', '4294969013'], /--seed takes an integer/],
    [['--seed', '17.5'], /--seed takes an integer/],
    [['--replicas', '0'], /--replicas takes an integer from 1/],
    [['--fault-rate', '1000000'], new RegExp(`--fault-rate takes a number from 0 to ${OPTION_LIMITS.faultsPerMin}`)],
    [['--fault-rate', ''], /--fault-rate takes a number/],
    [['--rate', 'nonsense=1'], /--rate takes <kind>=<per min>/],
    [['--rate', 'process_kill='], /--rate process_kill takes a number/],
    [['--rate', 'process_kill=2=3'], /--rate takes <kind>=<per min>/],
    [['--drain', '5'], /--drain takes a number from 120/],
    [['--verbose=no'], /unknown option --verbose=no/],
    [['--frobnicate'], /unknown option --frobnicate/],
  ])('refuses %j', (argv, problem) => {
    expect(() => parseOptions(argv)).toThrow(ChaosOptionError);
    expect(() => parseOptions(argv)).toThrow(problem);
  });
});
