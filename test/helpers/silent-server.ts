import { type AddressInfo, createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that accepts connections and never answers: a Kafka that hangs. */
export interface SilentServer {
  readonly port: number;
  /** True once something connected (a client is now waiting for an answer). */
  readonly connected: () => boolean;
  close(): void;
}

/** Starts a {@link SilentServer}. */
export async function silentServer(): Promise<SilentServer> {
  let connected = false;
  const server = createServer((socket) => {
    connected = true;
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, connected: () => connected, close: () => server.close() };
}
