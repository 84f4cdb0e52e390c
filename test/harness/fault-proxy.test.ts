import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy, type PostgresCluster, startCluster } from '../support/index.js';

describe('FaultProxy', () => {
  let cluster: PostgresCluster;
  let proxy: FaultProxy;

  beforeAll(async () => {
    cluster = await startCluster();
    proxy = await FaultProxy.start({ host: cluster.host, port: cluster.port });
  });

  afterAll(async () => {
    await proxy?.close();
    await cluster?.stop();
  });

  const viaProxy = () => new pg.Client(cluster.connectionConfig({ host: proxy.host, port: proxy.port }));

  it('forwards a pg connection to the target', async () => {
    const client = viaProxy();
    await client.connect();
    const { rows } = await client.query('SELECT 1 AS one');
    expect(rows[0]?.one).toBe(1);
    expect(proxy.connectionCount).toBe(1);
    await client.end();
  });

  it('resetAll makes an open client error; after resume a new client connects', async () => {
    const client = viaProxy();
    await client.connect();
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    const closed = new Promise((resolve) => client.once('end', resolve));
    proxy.resetAll();
    await closed;
    expect(errors.map((e) => e.message).join()).toMatch(/ECONNRESET|terminated/i);
    await expect(client.query('SELECT 1')).rejects.toThrow();

    await proxy.resume();
    const fresh = viaProxy();
    await fresh.connect();
    expect((await fresh.query('SELECT 2 AS two')).rows[0]?.two).toBe(2);
    await fresh.end();
  });

  it('refuseNew refuses connections until resume', async () => {
    await proxy.refuseNew();
    await expect(viaProxy().connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await proxy.resume();
    const client = viaProxy();
    await client.connect();
    await client.end();
  });

  it('stall holds a query until resume, which delivers it', async () => {
    const client = viaProxy();
    await client.connect();
    proxy.stall();
    let settled = false;
    const pending = client.query('SELECT 3 AS three').finally(() => {
      settled = true;
    });
    // The query cannot settle while stalled: a round trip to the server (not via the
    // proxy) proves the server itself is responsive in the meantime.
    await cluster.query('SELECT 1');
    expect(settled).toBe(false);
    await proxy.resume();
    expect((await pending).rows[0]?.three).toBe(3);
    await client.end();
  });

  it('latency delays each round trip by at least the latency in both directions', async () => {
    const client = viaProxy();
    await client.connect();
    proxy.setLatency(40);
    const started = performance.now();
    const { rows } = await client.query('SELECT $1::int AS n', [7]);
    const elapsed = performance.now() - started;
    await proxy.resume();
    expect(rows[0]?.n).toBe(7);
    // A lower bound only: the proxy holds each chunk for the latency, request and reply.
    expect(elapsed).toBeGreaterThanOrEqual(80);
    await client.end();
  });

  it("with latency, the server's last message arrives before its close (a refused login reads as such)", async () => {
    proxy.setLatency(40);
    try {
      const client = new pg.Client(
        cluster.connectionConfig({ host: proxy.host, port: proxy.port, password: 'not-the-password' }),
      );
      await expect(client.connect()).rejects.toMatchObject({ code: '28P01' });
    } finally {
      await proxy.resume();
    }
  });
});
