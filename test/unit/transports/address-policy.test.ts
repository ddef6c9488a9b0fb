/**
 * The address policy, address by address. Every "refused" row is a form an attacker could
 * use to reach something inside; every "allowed" row a real public host that must keep
 * working (a policy that refuses everything would pass the refusals).
 */
import { describe, expect, it } from 'vitest';
import { judgeAddress } from '../../../src/transports/address-policy.js';

const refused: Array<[string, string]> = [
  // IPv4
  ['0.0.0.0', 'this network'],
  ['0.1.2.3', 'this network'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.254', 'carrier-grade NAT'],
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['127.1', 'loopback'],
  ['169.254.169.254', 'link-local'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.1', 'IETF protocol assignments'],
  ['192.0.0.9', 'IETF protocol assignments'],
  ['192.0.2.10', 'documentation'],
  ['192.31.196.1', 'AS112 / AMT anycast'],
  ['192.52.193.1', 'AS112 / AMT anycast'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['192.168.0.1', 'private'],
  ['192.175.48.1', 'AS112 / AMT anycast'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.200', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved (240/4, broadcast)'],
  ['255.255.255.255', 'reserved (240/4, broadcast)'],
  // IPv6 outside global unicast
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
  ['::8.8.8.8', 'IPv4-compatible (deprecated)'],
  ['64:ff9b:1::a00:1', 'local-use NAT64'],
  ['100::1', 'discard'],
  ['fc00::1', 'unique local'],
  ['fd00:ec2::254', 'unique local'],
  ['fe80::1', 'link-local'],
  ['febf::1', 'link-local'],
  ['fec0::1', 'site-local (deprecated)'],
  ['ff02::1', 'multicast'],
  ['fe80::1%eth0', 'scoped (zone index)'],
  ['4000::1', 'not global unicast'],
  // IPv6 forms that carry an IPv4 address
  ['::ffff:127.0.0.1', 'IPv4-mapped form of a loopback address'],
  ['::ffff:7f00:1', 'IPv4-mapped form of a loopback address'],
  ['::ffff:10.1.2.3', 'IPv4-mapped form of a private address'],
  ['::ffff:169.254.169.254', 'IPv4-mapped form of a link-local address'],
  ['::ffff:0.0.0.0', 'IPv4-mapped form of a this network address'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated form of a loopback address'],
  ['64:ff9b::127.0.0.1', 'NAT64 form of a loopback address'],
  ['64:ff9b::192.168.0.1', 'NAT64 form of a private address'],
  ['64:ff9b::100.64.0.1', 'NAT64 form of a carrier-grade NAT address'],
  ['2002:7f00:1::', '6to4 form of a loopback address'],
  ['2002:a9fe:a9fe::1', '6to4 form of a link-local address'],
  ['2002:c0a8:101::1', '6to4 form of a private address'],
  // Special blocks inside 2000::/3
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001::1', 'Teredo'],
  ['2001:2::1', 'IETF protocol assignments'],
  ['2001:10::1', 'IETF protocol assignments'],
  ['2001:db8::1', 'documentation'],
  ['2001:db8:ffff::1', 'documentation'],
  ['3fff::1', 'documentation'],
  // Not addresses at all
  ['localhost', 'not an IP address'],
  ['', 'not an IP address'],
  ['1.2.3.4.5', 'not an IP address'],
  ['::ffff:1.2.3', 'not an IP address'],
];

const allowed = [
  '1.1.1.1',
  '8.8.8.8',
  '93.184.215.14',
  '100.63.255.255', // just below CGNAT
  '100.128.0.0', // just above CGNAT
  '172.15.255.255', // just below 172.16/12
  '172.32.0.0', // just above
  '192.0.1.1',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.254',
  '2001:4860:4860::8888',
  '2606:4700:4700::1111',
  '2a01:4f8::1',
  '2001:200::1', // just above 2001::/23
  '::ffff:8.8.8.8', // mapped public
  '64:ff9b::8.8.8.8', // NAT64 of a public address
  '2002:808:808::1', // 6to4 of a public address
  '[2606:4700:4700::1111]',
];

describe('judgeAddress', () => {
  it.each(refused)('refuses %s (%s)', (address, reason) => {
    expect(judgeAddress(address)).toEqual({ allowed: false, reason });
  });

  it.each(allowed)('allows %s', (address) => {
    expect(judgeAddress(address)).toEqual({ allowed: true });
  });
});
