import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';

/**
 * What a {@link TcpProxy} does with traffic:
 * - `pass`: forwards both ways;
 * - `drop-responses`: forwards requests to the broker, throws its responses away (the broker
 *   writes what it is sent, the client never hears back: a lost response, a half-broken link);
 * - `black-hole`: forwards nothing either way, connections stay open (a frozen broker).
 */
export type ProxyMode = 'pass' | 'drop-responses' | 'black-hole';

/**
 * A TCP proxy on 127.0.0.1 in front of one Kafka broker port, for tests of what the senders do
 * when a connection misbehaves. It cuts the streams at Kafka's frame boundaries (a 4-byte size,
 * then the frame), so dropping or passing whole requests and responses keeps each connection
 * well-formed and a connection carries on once {@link heal}ed. Modes apply to every connection,
 * open and future.
 *
 * Route a kafkajs client through it with {@link socketFactory} (every broker connection, whatever
 * address metadata gives); for librdkafka, start a broker whose `advertised.listeners` names
 * {@link port}.
 */
export class TcpProxy {
  /** How traffic is handled now; see {@link ProxyMode}. */
  mode: ProxyMode = 'pass';
  /** Responses thrown away so far. */
  droppedResponses = 0;
  /** Requests thrown away so far. */
  droppedRequests = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** The port the proxy listens on. */
    readonly port: number,
  ) {}

  /** Listens on `port` (default: a free one) and forwards to `127.0.0.1:<targetPort>`. */
  static async start(targetPort: number, port = 0): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => proxy?.accept(client, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('TcpProxy: no port');
    proxy = new TcpProxy(server, address.port);
    return proxy;
  }

  /** `127.0.0.1:<port>`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Back to `pass`. */
  heal(): void {
    this.mode = 'pass';
  }

  /** A kafkajs `socketFactory` that connects every broker connection to this proxy. */
  readonly socketFactory = ({ onConnect }: { onConnect: () => void }): Socket =>
    netConnect({ host: '127.0.0.1', port: this.port }, onConnect);

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, targetPort: number): void {
    const broker = netConnect({ host: '127.0.0.1', port: targetPort });
    this.sockets.add(client);
    this.sockets.add(broker);
    const end = () => {
      client.destroy();
      broker.destroy();
      this.sockets.delete(client);
      this.sockets.delete(broker);
    };
    client.on('error', end).on('close', end);
    broker.on('error', end).on('close', end);
    framed(client, (frame) => {
      if (this.mode === 'black-hole') this.droppedRequests++;
      else broker.write(frame);
    });
    framed(broker, (frame) => {
      if (this.mode === 'pass') client.write(frame);
      else this.droppedResponses++;
    });
  }
}

/** Calls `onFrame` with each whole Kafka frame (size prefix included) read from `socket`. */
function framed(socket: Socket, onFrame: (frame: Buffer) => void): void {
  let buffered: Buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4) {
      const size = buffered.readInt32BE(0);
      if (buffered.length < 4 + size) break;
      onFrame(buffered.subarray(0, 4 + size));
      buffered = buffered.subarray(4 + size);
    }
  });
}
