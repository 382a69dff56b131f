/** CidrList answers as node:net's BlockList does, on the policy's subnets and random addresses near them. */
import { BlockList, isIP } from 'node:net';
import { expect, test } from 'vitest';
import { CidrList } from './cidr';

const V4 = ['0.0.0.0/8', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '192.0.0.0/24', '192.0.2.0/24',
  '198.51.100.0/24', '203.0.113.0/24', '192.88.99.0/24', '198.18.0.0/15', '224.0.0.0/4', '255.255.255.255/32', '240.0.0.0/4', '127.0.0.0/8',
  '169.254.169.254/32', '0.0.0.0/0'];
const V6 = ['::/128', '::1/128', '::ffff:0:0/96', '::ffff:0:0:0/96', '::/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', 'fc00::/7', 'fe80::/10',
  'fec0::/10', 'ff00::/8', '2001:db8::/32', '3fff::/20', '2002::/16', '2001::/23', '5f00::/16', '2000::/3', 'fd00:ec2::254/128'];

let seed = 42;
const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
const hex = () => rnd(0x10000).toString(16);

function randomV4(): string {
  const near = V4[rnd(V4.length)].split('/')[0].split('.').map(Number);
  return near.map((o, i) => (rnd(4) === 0 || i > 1 ? rnd(256) : o)).join('.');
}
function randomV6(): string {
  const forms = [
    () => `${V6[rnd(V6.length)].split('/')[0].replace(/::$/, '')}::${hex()}`,
    () => Array.from({ length: 8 }, hex).join(':'),
    () => `::ffff:${rnd(256)}.${rnd(256)}.${rnd(256)}.${rnd(256)}`,
    () => `64:ff9b::${rnd(256)}.${rnd(256)}.1.2`,
    () => `${hex()}:${hex()}::${hex()}:${hex()}`,
    () => `::${hex()}`,
    () => '::',
    () => `fe80::${hex()}:${hex()}`,
    () => `2001:${rnd(2) ? 'db8' : hex()}::${hex()}`,
  ];
  return forms[rnd(forms.length)]();
}

test('each subnet alone gives the same answers as BlockList for 4,000 addresses', () => {
  let compared = 0;
  for (const [cidrs, family, gen] of [[V4, 'ipv4', randomV4], [V6, 'ipv6', randomV6]] as const) {
    for (const cidr of cidrs) {
      const [net, bits] = cidr.split('/');
      const ours = new CidrList();
      const theirs = new BlockList();
      ours.addSubnet(net, Number(bits), family);
      theirs.addSubnet(net, Number(bits), family);
      for (let i = 0; i < 4000 / cidrs.length; i++) {
        const ip = gen();
        if (isIP(ip) !== (family === 'ipv4' ? 4 : 6)) continue;
        expect([ip, cidr, ours.check(ip, family)]).toEqual([ip, cidr, theirs.check(ip, family)]);
        compared++;
      }
    }
  }
  expect(compared).toBeGreaterThan(7000);
});

test('edges of a subnet', () => {
  const l = new CidrList();
  l.addSubnet('172.16.0.0', 12, 'ipv4');
  l.addSubnet('fc00::', 7, 'ipv6');
  expect(['172.15.255.255', '172.16.0.0', '172.31.255.255', '172.32.0.0'].map((ip) => l.check(ip, 'ipv4'))).toEqual([false, true, true, false]);
  expect(['fbff:ffff::1', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fe00::'].map((ip) => l.check(ip, 'ipv6'))).toEqual([false, true, true, false]);
});
