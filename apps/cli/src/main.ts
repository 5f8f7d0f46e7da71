import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { loadConfig } from '@touchpoint/config';
import { ErrorCode } from '@touchpoint/errors';
import { PinoNestLogger } from '@touchpoint/observability';
import { CliConfig } from './cli.config.js';
import { CliModule } from './cli.module.js';
import { createCliLogger } from './output/cli-logger.js';
import { envelopeOf } from './output/cli-output.js';

const json = process.argv.includes('--json');

/** Prints a failure that happened outside a command (config, usage) and exits non-zero. */
function failOutside(code: string, message: string, exitCode: number): never {
  if (json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
  else process.stderr.write(`error (${code}): ${message}\n`);
  // stdout and stderr are synchronous for files and pipes on Linux, so nothing is lost by exiting.
  process.exit(exitCode);
}

let config: CliConfig;
try {
  config = loadConfig(CliConfig);
} catch (err) {
  failOutside(ErrorCode.ValidationFailed, (err as Error).message, 1);
}
const logger = createCliLogger(config.LOG_LEVEL);

try {
  await CommandFactory.run(CliModule.forRoot(config, logger), {
    cliName: 'npm run cli --',
    logger: new PinoNestLogger(logger),
    // Usage errors (unknown command or option, missing option): commander explains on stderr and
    // exits 1 by itself; this hook (inherited by every subcommand) adds the JSON envelope.
    outputConfiguration: {
      outputError: (message, write) => {
        write(message);
        if (json) process.stdout.write(`${JSON.stringify({ error: { code: ErrorCode.ValidationFailed, message: message.trim().replace(/^error: /, '') } })}\n`);
      },
    },
    serviceErrorHandler: (err) => {
      const { error } = envelopeOf(err);
      failOutside(error.code, error.message, 1);
    },
  });
} catch (err) {
  const { error } = envelopeOf(err);
  failOutside(error.code, error.message, 1);
}
// Drivers may keep timers (reconnects, pools) alive: the command is done, so is the process.
process.exit(process.exitCode ?? 0);
