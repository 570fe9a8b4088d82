#!/usr/bin/env node
import { main } from './main.js';

// A reader that stops early (`viewsync export … | head`) closes the pipe: that is the reader's
// choice, not a failure, so the command ends quietly, as other command-line tools do.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  process.stderr.write(`viewsync: cannot write to stdout: ${error.message}\n`);
  process.exit(1);
});

// The exit code is set, not forced: stdout may still be flushing into a pipe.
main(process.argv.slice(2)).then(
  (code) => void (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`viewsync: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
