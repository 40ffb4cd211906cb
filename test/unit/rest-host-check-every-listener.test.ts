/**
 * The Host check runs on every connection of every listener, not only on connections whose
 * local address is loopback (as it first did on a listener on every interface or a LAN address
 * with rest.allowed.host.names unset). DNS rebinding does not need 127.0.0.1:
 * - the attacker's name re-pointed at the worker's LAN address (any browser on the LAN);
 * - a worker in a container published with `docker run -p 8083:8083`: the victim's browser
 *   goes to 127.0.0.1:8083 on the host, but inside the container the connection's local
 *   address is the container's (172.17.0.x), so the very attack the check was made for passes.
 * A follower that lets such a request in forwards it to the leader with the leader's own Host.
 */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { hostRefusal } from '../../src/rest/cross-origin.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';

async function policyOf(listeners: string) {
  return ((await resolveRestOptions({ listeners })) as RestOptions).hosts;
}

describe('Host check on a listener on every interface', () => {
  it('refuses an attacker name that reached the worker on its LAN address', async () => {
    const policy = await policyOf('http://0.0.0.0:8083');
    expect(hostRefusal('rebind.attacker.example:8083', policy)).toMatch(/Host refused/);
  });

  it('refuses an attacker name that reached a containerised worker through a published port (local address 172.17.0.2)', async () => {
    const policy = await policyOf('http://0.0.0.0:8083');
    expect(hostRefusal('rebind.attacker.example:8083', policy)).toMatch(/Host refused/);
  });

  it('refuses it on a listener on a LAN address too', async () => {
    const policy = await policyOf('http://192.168.1.10:8083');
    expect(hostRefusal('rebind.attacker.example:8083', policy)).toMatch(/Host refused/);
  });

  it("answers the machine's name, its short form, rest.advertised.host.name and the listener's name (what forwarded requests are addressed to)", async () => {
    const policy = await policyOf('http://0.0.0.0:8083');
    expect(hostRefusal(`${hostname()}:8083`, policy)).toBeUndefined();
    expect(hostRefusal(`${hostname().split('.')[0]}:8083`, policy)).toBeUndefined();
    const advertised = (
      (await resolveRestOptions({
        listeners: 'http://0.0.0.0:8083',
        'rest.advertised.host.name': 'worker-1.internal',
      })) as RestOptions
    ).hosts;
    expect(hostRefusal('worker-1.internal:8083', advertised)).toBeUndefined();
    expect(hostRefusal('connect.internal:8083', await policyOf('http://connect.internal:8083'))).toBeUndefined();
  });

  it('still answers the same connection addressed by IP or by localhost', async () => {
    const policy = await policyOf('http://0.0.0.0:8083');
    expect(hostRefusal('192.168.1.10:8083', policy)).toBeUndefined();
    expect(hostRefusal('localhost:8083', policy)).toBeUndefined();
  });
});
