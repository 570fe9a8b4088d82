#!/usr/bin/env node
import { main } from './main.js';

// The exit code is set, not forced: stdout may still be flushing into a pipe.
main(process.argv.slice(2)).then(
  (code) => void (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`viewsync: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
