/** A Node writable: a socket's response, a compressor, the CLI's stdout. */
interface Writable {
  on(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/** Resolves true once `stream` takes more after a full `write`, false if it closes first. */
export function drained(stream: Writable): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      stream.off('drain', onDrain);
      stream.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    stream.on('drain', onDrain);
    stream.on('close', onClose);
  });
}
