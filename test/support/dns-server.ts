import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import dnsPacket from 'dns-packet';

/** One SRV record as a test sets it. */
export interface SrvAnswer {
  readonly priority: number;
  readonly weight: number;
  readonly port: number;
  readonly target: string;
}

/**
 * A real DNS server on loopback UDP, written in Node for the tests (dns-packet encodes
 * and decodes the wire format; no dnsmasq needed): it answers SRV queries from a table
 * the test changes at any moment, NXDOMAIN for names not in it. Point a resolver at
 * `server` (`127.0.0.1:<port>`). Counts the queries it answered, per name.
 */
export class TestDnsServer {
  readonly #socket: Socket;
  readonly #srv = new Map<string, readonly SrvAnswer[]>();
  readonly #queries = new Map<string, number>();

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('message', (message, from) => this.#answer(message, from));
  }

  /** Starts a server on a free loopback port. */
  static async start(): Promise<TestDnsServer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    return new TestDnsServer(socket);
  }

  /** `127.0.0.1:<port>`, as `Resolver#setServers` takes it. */
  get server(): string {
    return `127.0.0.1:${this.#socket.address().port}`;
  }

  /** Answers `name` with these SRV records from now on (an empty list: NOERROR, no answer). */
  setSrv(name: string, answers: readonly SrvAnswer[]): void {
    this.#srv.set(name.toLowerCase(), answers);
  }

  /** Answers `name` with NXDOMAIN from now on. */
  remove(name: string): void {
    this.#srv.delete(name.toLowerCase());
  }

  /** How many queries for `name` were answered so far. */
  queries(name: string): number {
    return this.#queries.get(name.toLowerCase()) ?? 0;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #answer(message: Buffer, from: RemoteInfo): void {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return; // not DNS: no answer, as a real server would drop it
    }
    const question = query.questions?.[0];
    const name = question?.name.toLowerCase() ?? '';
    const records = this.#srv.get(name);
    const answers: dnsPacket.Answer[] =
      question?.type === 'SRV' && records
        ? records.map((r) => ({
            type: 'SRV',
            name: question.name,
            ttl: 1,
            class: 'IN',
            data: { priority: r.priority, weight: r.weight, port: r.port, target: r.target },
          }))
        : [];
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      // RD copied, RA set; RCODE 3 (NXDOMAIN) for a name not in the table.
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (records ? 0 : 3),
      questions: query.questions,
      answers,
    });
    this.#queries.set(name, (this.#queries.get(name) ?? 0) + 1);
    this.#socket.send(response, from.port, from.address);
  }
}
