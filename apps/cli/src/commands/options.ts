import { SERVICES, type ServiceName } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';

/** Options every command takes. */
export interface JsonOption {
  json?: boolean;
}

/** `validation_failed` naming a command-line option, as the CLI prints it. */
export function badOption(option: string, problem: string): AppError {
  return new AppError(ErrorCode.ValidationFailed, `--${option}: ${problem}`, [{ field: option, problems: [problem] }]);
}

/** A service name from `--service`. @throws AppError validation_failed */
export function parseService(value: string | undefined): ServiceName {
  if (!value || !(SERVICES as readonly string[]).includes(value)) throw badOption('service', `must be one of ${SERVICES.join(', ')}`);
  return value as ServiceName;
}

/** A comma-separated list (`a,b, c`) → trimmed non-empty items. */
export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
