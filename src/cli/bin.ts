#!/usr/bin/env node
import { setTimeout } from 'node:timers';
import { main } from './main.js';

// A reader that stops early (`viewsync export … | head`) closes the pipe: that is the reader's
// choice, not a failure, so the command ends quietly, as other command-line tools do.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  process.stderr.write(`viewsync: cannot write to stdout: ${error.message}\n`);
  process.exit(1);
});

// The exit code is set, and the exit forced only once stdout has flushed into its pipe. Forced,
// because the command is done and its store closed, but a driver may still hold the process:
// postgres.js, ended while reconnecting to something that is not PostgreSQL, connects once more
// and waits out its connect timeout.
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    process.stdout.write('', () => setTimeout(() => process.exit(code), 200).unref());
  },
  (error: unknown) => {
    process.stderr.write(`viewsync: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
