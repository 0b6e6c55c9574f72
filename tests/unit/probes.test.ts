import { parseBindAddress, startProbeServer } from '../../worker/probes.js';

test.each<[string, { host: string; port: number } | undefined]>([
  [':8081', { host: '0.0.0.0', port: 8081 }],
  ['127.0.0.1:9000', { host: '127.0.0.1', port: 9000 }],
  ['[::1]:0', { host: '::1', port: 0 }],
  ['0', undefined],
])('bind address %s', (value, expected) =>
  expect(parseBindAddress('health-probe-bind-address', value)).toEqual(expected),
);

test.each(['8081', 'localhost', ':99999', 'a:b:c:1', ''])('"%s" is refused, naming the flag', (value) => {
  expect(() => parseBindAddress('metrics-bind-address', value)).toThrow(
    /^--metrics-bind-address: ".*" is not an address/,
  );
});

test('the probes answer 200 ok, or 503 with the reason', async () => {
  let ready: true | string = 'starting';
  const server = await startProbeServer({ host: '127.0.0.1', port: 0 }, { live: () => true, ready: () => ready });
  try {
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${server.port}${path}`);
      return [res.status, (await res.text()).trim()];
    };
    expect(await get('/healthz')).toEqual([200, 'ok']);
    expect(await get('/readyz')).toEqual([503, 'starting']);
    ready = true;
    expect(await get('/readyz')).toEqual([200, 'ok']);
    expect((await get('/metrics'))[0]).toBe(404);
  } finally {
    await server.close();
  }
});
