/** Injection token of the CLI's validated config. */
export const CLI_CONFIG = Symbol('touchpoint:cli-config');
