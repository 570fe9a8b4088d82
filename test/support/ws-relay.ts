import { connect } from 'node:net';
import { WebSocketServer } from 'ws';

/**
 * A WebSocket-to-TCP relay, as Neon documents for local development: each WebSocket becomes a
 * TCP connection to PostgreSQL, bytes passed both ways unchanged. Resolves to its `host:port`.
 */
export async function startRelay(target: { host: string; port: number }): Promise<{ address: string; close(): Promise<void> }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (socket) => {
    const tcp = connect(target.port, target.host);
    socket.on('message', (data: Buffer) => tcp.write(data));
    tcp.on('data', (data) => socket.send(data));
    const end = () => {
      socket.terminate();
      tcp.destroy();
    };
    socket.on('close', end).on('error', end);
    tcp.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    close: () => {
      for (const client of server.clients) client.terminate();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
