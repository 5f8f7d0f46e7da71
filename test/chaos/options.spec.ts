import { DEFAULT_FAULT_RATES, FAULT_KINDS } from './faults.js';
import { ChaosOptionError, DEFAULT_OPTIONS, OPTION_LIMITS, parseOptions, type ParsedOptions, replayArgs, replayCommand } from './main.js';

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
    [['--duration', 'abc'], /--duration takes an integer/],
    [['--duration', ''], /--duration takes an integer/],
    [['--seed='], /--seed takes an integer from 0 to 2147483647/],
    [['--seed', ' '], /--seed takes an integer/],
    [['--seed', '1e21'], /--seed takes an integer from 0 to 2147483647/],
    [['--seed', '4294969013'], /--seed takes an integer/],
    [['--seed', '17.5'], /--seed takes an integer/],
    [['--replicas', '0'], /--replicas takes an integer from 1/],
    [['--fault-rate', '1000000'], new RegExp(`--fault-rate takes a number \\(at most 6 decimals\\) from 0 to ${OPTION_LIMITS.faultsPerMin}`)],
    [['--fault-rate', ''], /--fault-rate takes a number/],
    [['--rate', 'nonsense=1'], /--rate takes <kind>=<per min>/],
    [['--rate', 'process_kill='], /--rate process_kill takes a number/],
    [['--rate', 'process_kill=2=3'], /--rate takes <kind>=<per min>/],
    [['--drain', '5'], /--drain takes an integer from 120/],
    // Number() would read each of these as a number; only decimals written out are options.
    [['--duration', '0x10'], /--duration takes an integer from 1 to 86400/],
    [['--duration', '1e3'], /--duration takes an integer/],
    [['--duration', ' 5'], /--duration takes an integer/],
    [['--duration', '5 '], /--duration takes an integer/],
    [['--duration', '+5'], /--duration takes an integer/],
    [['--duration', '5.'], /--duration takes an integer/],
    [['--duration', '40.5'], /--duration takes an integer/],
    [['--duration', '-5'], /--duration takes an integer/],
    [['--duration', '0'], /--duration takes an integer from 1/],
    [['--seed', '0b101'], /--seed takes an integer/],
    [['--seed', '0o17'], /--seed takes an integer/],
    [['--seed', 'Infinity'], /--seed takes an integer/],
    [['--replicas', '2.0'], /--replicas takes an integer/],
    [['--replicas', '٣'], /--replicas takes an integer/],
    [['--drain', '1.2e2'], /--drain takes an integer from 120/],
    [['--drain', '150.5'], /--drain takes an integer/],
    [['--fault-rate', '0x1'], /--fault-rate takes a number \(at most 6 decimals\) from 0 to 60/],
    [['--fault-rate', '1e1'], /--fault-rate takes a number/],
    [['--fault-rate', '.5'], /--fault-rate takes a number/],
    [['--fault-rate', '5.'], /--fault-rate takes a number/],
    [['--fault-rate', '+2'], /--fault-rate takes a number/],
    [['--fault-rate', ' 2'], /--fault-rate takes a number/],
    [['--fault-rate', '0.0000001'], /--fault-rate takes a number \(at most 6 decimals\)/],
    [['--rate', 'process_kill=1e-3'], /--rate process_kill takes a number/],
    [['--rate', 'process_kill=0x2'], /--rate process_kill takes a number/],
    [['--verbose=no'], /unknown option --verbose=no/],
    [['--frobnicate'], /unknown option --frobnicate/],
  ])('refuses %j', (argv, problem) => {
    expect(() => parseOptions(argv)).toThrow(ChaosOptionError);
    expect(() => parseOptions(argv)).toThrow(problem);
  });

  it.each([
    [['--duration', '5'], { durationMs: 5_000 }],
    [['--duration', '005'], { durationMs: 5_000 }],
    [['--seed', '0'], { seed: 0 }],
    [['--seed', '2147483647'], { seed: 2_147_483_647 }],
    [['--replicas', '8'], { replicas: 8 }],
    [['--drain', '120'], { drainTimeoutMs: 120_000 }],
  ])('takes %j', (argv, expected) => {
    expect(parseOptions(argv)).toMatchObject(expected);
  });

  it.each([
    ['0', 0],
    ['60', 60],
    ['0.5', 0.5],
    ['2.25', 2.25],
    ['0.000001', 0.000001],
    ['07.10', 7.1],
  ])('takes the rate %s', (text, rate) => {
    expect(parseOptions(['--fault-rate', text])!.rates.provider_slow).toBe(rate);
    expect(parseOptions(['--rate', `webhook_late=${text}`])!.rates.webhook_late).toBe(rate);
  });

  describe('replayArgs', () => {
    const base: ParsedOptions = { ...DEFAULT_OPTIONS, seed: 1717, rates: { ...DEFAULT_FAULT_RATES } };
    const perKind = Object.fromEntries(FAULT_KINDS.map((k, i) => [k, i / 8])) as ParsedOptions['rates'];

    it.each<[string, ParsedOptions]>([
      ['the defaults', base],
      ['the smoke run', { ...base, durationMs: 40_000, rates: Object.fromEntries(FAULT_KINDS.map((k) => [k, 3])), drainTimeoutMs: 120_000 }],
      ['every option off its default', { ...base, seed: 0, durationMs: 86_400_000, replicas: 3, drainTimeoutMs: 240_000, verbose: true, rates: { ...Object.fromEntries(FAULT_KINDS.map((k) => [k, 2])), process_kill: 0 } }],
      ['one kind off', { ...base, rates: { ...DEFAULT_FAULT_RATES, database_cut: 0 } }],
      ['a different rate for every kind', { ...base, seed: OPTION_LIMITS.seed, rates: perKind }],
      ['rates with six decimals', { ...base, rates: { ...DEFAULT_FAULT_RATES, provider_slow: 0.000001, webhook_late: 59.999999 } }],
      ['two rates as common', { ...base, rates: Object.fromEntries(FAULT_KINDS.map((k, i) => [k, i % 2 ? 1 : 4])) }],
    ])('reads back as the same options: %s', (_, o) => {
      expect(parseOptions(replayArgs(o))).toEqual(o);
    });

    it('names the seed and duration, and only the options off their defaults', () => {
      expect(replayCommand({ ...base, durationMs: 40_000 })).toBe('npm run chaos -- --seed 1717 --duration 40');
      expect(replayArgs({ ...base, replicas: 3, rates: { ...DEFAULT_FAULT_RATES, process_kill: 0 } })).toEqual(['--seed', '1717', '--duration', '600', '--replicas', '3', '--rate', 'process_kill=0']);
    });

    it('spells unequal rates as --rate for each kind off its default only', () => {
      expect(replayArgs({ ...base, rates: { ...base.rates, process_kill: 0, provider_5xx: 2.5 } })).toEqual(['--seed', '1717', '--duration', '600', '--rate', 'process_kill=0', '--rate', 'provider_5xx=2.5']);
    });
  });
});
