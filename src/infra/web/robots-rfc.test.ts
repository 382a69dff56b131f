/**
 * robots.txt decisions against a table derived from RFC 9309 (its rules and its examples) and the
 * behaviour of Google's reference parser on the same points (user-agent product tokens, byte-order
 * marks, misspelt keys, group boundaries). Each row: a robots.txt, a crawler token, a URL path,
 * the expected decision. The file goes through the whole policy (parse, URL normalisation, match).
 * Where svc deliberately differs from Google's parser (percent-encoding), the row says so.
 */
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../lib/clock';
import type { GuardedClient } from './guarded-client';
import { createRobotsPolicy, parseRobotsTxt, userAgentToken } from './robots';

function fixed(body: Buffer): GuardedClient {
  return {
    fetch: async (url) => ({ status: 200, headers: {}, finalUrl: url, body, contentType: 'text/plain', redirects: 0, truncated: false }),
    checkUrl: (u) => new URL(String(u)),
    validatePublicUrl: async (u) => new URL(String(u)),
    resolve: async () => {},
    close: async () => {},
  };
}

async function allowed(robots: string | Buffer, token: string, path: string): Promise<boolean> {
  const body = typeof robots === 'string' ? Buffer.from(robots, 'utf8') : robots;
  const policy = createRobotsPolicy({ client: fixed(body), clock: new ManualClock(), ttlMs: 1000, errorTtlMs: 1000, token });
  const byText = (await policy.decide(`http://robots.test${path}`)) === 'allowed';
  // A URL object (browse passes the one it checked) is decided alike and left as it was.
  const url = new URL(`http://robots.test${path}`);
  const href = url.href;
  expect((await policy.decide(url)) === 'allowed').toBe(byText);
  expect(url.href).toBe(href);
  return byText;
}

/** RFC 9309 section 5.1, the simple example, verbatim. */
const RFC_EXAMPLE = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`;

/** Google's reference tests on group boundaries (rules before any group, blank lines, a group opened twice). */
const GROUPS = `allow: /foo/bar/

user-agent: FooBot
disallow: /
allow: /x/
user-agent: BarBot
disallow: /
allow: /y/


allow: /w/
user-agent: BazBot

user-agent: FooBot
allow: /z/
disallow: /
`;

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const withBytes = (prefix: number[], text: string) => Buffer.concat([Buffer.from(prefix), Buffer.from(text)]);

type Row = [what: string, robots: string | Buffer, token: string, path: string, expected: boolean];

const rows: Row[] = [
  // 5.1 the simple example
  ['5.1: * group, *.gif$ disallowed', RFC_EXAMPLE, 'otherbot', '/images/a.gif', false],
  ['5.1: * group, /example/ disallowed', RFC_EXAMPLE, 'otherbot', '/example/x', false],
  ['5.1: * group, /publications/ allowed', RFC_EXAMPLE, 'otherbot', '/publications/x', true],
  ['5.1: * group, other paths allowed', RFC_EXAMPLE, 'otherbot', '/anything', true],
  ['5.1: foobot, Disallow:/ without a space', RFC_EXAMPLE, 'foobot', '/anything', false],
  ['5.1: foobot, allowed page', RFC_EXAMPLE, 'foobot', '/example/page.html', true],
  ['5.1: foobot, allowed gif (its group, not *)', RFC_EXAMPLE, 'foobot', '/example/allowed.gif', true],
  ['5.1: barbot, its own rule', RFC_EXAMPLE, 'barbot', '/example/page.html', false],
  ['5.1: barbot, * rules do not apply', RFC_EXAMPLE, 'barbot', '/example/other', true],
  ['5.1: bazbot shares barbot\'s group', RFC_EXAMPLE, 'bazbot', '/example/page.html', false],
  ['5.1: bazbot, gif allowed (not the * group)', RFC_EXAMPLE, 'bazbot', '/a.gif', true],
  ['5.1: quxbot, an empty group allows everything', RFC_EXAMPLE, 'quxbot', '/example/x', true],
  ['5.1: tokens match case-insensitively', RFC_EXAMPLE, 'FooBot', '/anything', false],
  // 5.2 longest match
  ['5.2: longest match wins (disallow)', 'User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n', 'foobot', '/example/page/disallowed.gif', false],
  ['5.2: longest match wins (allow)', 'User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n', 'foobot', '/example/page/other', true],
  // 2.2.2 rules
  ['2.2.2: equivalent allow and disallow: allow', 'User-agent: *\nAllow: /page\nDisallow: /page\n', 'a', '/page', true],
  ['2.2.2: no matching rule: allowed', 'User-agent: *\nDisallow: /x\n', 'a', '/y', true],
  ['2.2.2: rules are case-sensitive', 'User-agent: *\nDisallow: /x/\n', 'a', '/X/', true],
  ['2.2.2: /robots.txt is implicitly allowed', 'User-agent: *\nDisallow: /\n', 'a', '/robots.txt', true],
  ['2.2.2: an empty Disallow is no rule', 'User-agent: *\nDisallow:\n', 'a', '/x', true],
  ['2.2.2: longest match: /*.html beats /page', 'User-agent: *\nAllow: /page\nDisallow: /*.html\n', 'a', '/page.html', false],
  ['2.2.2: longest match: /x/page.html beats /*.html', 'User-agent: *\nAllow: /x/page.html\nDisallow: /*.html\n', 'a', '/x/page.html', true],
  ['2.2.2: Allow: /$ allows only the root', 'User-agent: *\nAllow: /$\nDisallow: /\n', 'a', '/', true],
  ['2.2.2: Allow: /$ not past the root', 'User-agent: *\nAllow: /$\nDisallow: /\n', 'a', '/page.html', false],
  // 2.2.2 percent-encoding (RFC table)
  ['2.2.2: UTF-8 rule matches the encoded URL', 'User-agent: *\nDisallow: /foo/bar/ツ\n', 'a', '/foo/bar/%E3%83%84', false],
  ['2.2.2: encoded rule matches the encoded URL', 'User-agent: *\nDisallow: /foo/bar/%E3%83%84\n', 'a', '/foo/bar/%E3%83%84', false],
  ['2.2.2: hex digits in either case', 'User-agent: *\nDisallow: /foo/bar/%e3%83%84\n', 'a', '/foo/bar/%E3%83%84', false],
  ['2.2.2: an encoded query matches as written', 'User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n', 'a', '/foo/bar?baz=https%3A%2F%2Ffoo.bar', false],
  ['2.2.2: a plain query matches as written', 'User-agent: *\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n', 'a', '/foo/bar?qux=taz&baz=http://foo.bar?tar&par', true],
  // svc differs from Google's parser here, as RFC 9309's table asks: %62%61%7A is /baz
  ['2.2.2: escaped unreserved characters are the characters (rule)', 'User-agent: *\nDisallow: /foo/bar/%62%61%7A\n', 'a', '/foo/bar/baz', false],
  ['2.2.2: escaped unreserved characters are the characters (URL)', 'User-agent: *\nDisallow: /private\n', 'a', '/%70rivate', false],
  ['2.2.2: a reserved escape (%2F) is not a slash', 'User-agent: *\nDisallow: /a/b\n', 'a', '/a%2Fb', true],
  // 2.2.3 special characters
  ['2.2.3: # starts a comment', 'User-agent: * # everyone\nDisallow: /x # not /x#y\n', 'a', '/x', false],
  ['2.2.3: a commented-out rule is no rule', 'User-agent: *\n# Disallow: /\n', 'a', '/x', true],
  ['2.2.3: $ ends the pattern', 'User-agent: *\nDisallow: /this/path/exactly$\n', 'a', '/this/path/exactly', false],
  ['2.2.3: $ ends the pattern (longer path)', 'User-agent: *\nDisallow: /this/path/exactly$\n', 'a', '/this/path/exactly/more', true],
  ['2.2.3: * any run of characters', 'User-agent: *\nDisallow: /this/path/*/with/asterisk\n', 'a', '/this/path/x/y/with/asterisk', false],
  ['2.2.3: * matches an empty run', 'User-agent: *\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n', 'a', '/foo//qux', true],
  ['2.2.3: %2A in a rule is a literal *', 'User-agent: *\nDisallow: /path/file-with-a-%2A.html\n', 'a', '/path/file-with-a-*.html', false],
  ['2.2.3: %2A in a rule is not a wildcard', 'User-agent: *\nDisallow: /path/file-with-a-%2A.html\n', 'a', '/path/file-with-a-b.html', true],
  ['2.2.3: %24 in a rule is a literal $', 'User-agent: *\nDisallow: /path/foo-%24\n', 'a', '/path/foo-$', false],
  ['2.2.3: $ in the middle is literal', 'User-agent: *\nDisallow: /a$b\n', 'a', '/a$b', false],
  // 2.2.1 user-agent lines and groups
  ['2.2.1: the * group applies when none names us', 'User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n', 'svc-browse', '/y', true],
  ['2.2.1: no group for us and no *: no rules', 'User-agent: other\nDisallow: /\n', 'svc-browse', '/y', true],
  ['2.2.1: groups naming us are merged', 'user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n', 'examplebot', '/baz', false],
  ['2.2.1: groups naming us are merged (first)', 'user-agent: ExampleBot\ndisallow: /foo\n\nuser-agent: ExampleBot\ndisallow: /baz\n', 'examplebot', '/foo', false],
  ['2.2.1: our group wins over *', 'User-agent: *\nDisallow: /\n\nUser-agent: svc-browse\nAllow: /\n', 'svc-browse', '/x', true],
  ['2.2.1: a name with a version: svc-browse/1.0', 'User-agent: svc-browse/1.0\nDisallow: /\n', 'svc-browse', '/x', false],
  ['2.2.1: FOO BAR names foo', 'User-agent: FOO BAR\nDisallow: /\n', 'foo', '/x', false],
  ['2.2.1: a trailing * names the token', 'User-agent: svc-browse*\nDisallow: /\n', 'svc-browse', '/x', false],
  ['2.2.1: digits end the token (svc-browse2 names svc-browse, as Google reads it)', 'User-agent: svc-browse2\nDisallow: /\n', 'svc-browse', '/x', false],
  ['2.2.1: a longer name is another crawler', 'User-agent: svc-browse-images\nDisallow: /\n', 'svc-browse', '/x', true],
  ['2.2.1: a prefix is another crawler', 'User-agent: svc\nDisallow: /\n', 'svc-browse', '/x', true],
  ['2.2.1: "* " with a trailing word is the * group', 'User-agent: * everyone\nDisallow: /\n', 'svc-browse', '/x', false],
  ['2.2.1: key case does not matter', 'uSeR-aGeNt: *\ndIsAlLoW: /x\n', 'a', '/x', false],
  ['2.1: rules before any user-agent belong to no group', 'Disallow: /\nUser-agent: *\nAllow: /a\n', 'a', '/x', true],
  ['2.1: a blank line does not end a group', 'User-agent: a\n\nDisallow: /x\n', 'a', '/x', false],
  ['2.1: a sitemap line does not end a group', 'User-agent: a\nSitemap: https://robots.test/s.xml\nDisallow: /x\n', 'a', '/x', false],
  ['2.1: CR line ends', 'User-agent: a\rDisallow: /x\r', 'a', '/x', false],
  ['2.1: CRLF line ends', 'User-agent: a\r\nDisallow: /x\r\n', 'a', '/x', false],
  ['2.1: an empty file allows everything', '', 'a', '/x', true],
  // Google's group-boundary tests
  ['groups: FooBot /x/', GROUPS, 'FooBot', '/x/', true],
  ['groups: FooBot /z/ (its second group)', GROUPS, 'FooBot', '/z/', true],
  ['groups: FooBot /y/', GROUPS, 'FooBot', '/y/', false],
  ['groups: BarBot /y/', GROUPS, 'BarBot', '/y/', true],
  ['groups: BarBot /w/ (after blank lines, same group)', GROUPS, 'BarBot', '/w/', true],
  ['groups: BarBot /z/', GROUPS, 'BarBot', '/z/', false],
  ['groups: BazBot /z/ (shares FooBot\'s last group)', GROUPS, 'BazBot', '/z/', true],
  ['groups: BazBot /foo/bar/ (rules before any group)', GROUPS, 'BazBot', '/foo/bar/', false],
  // Google's parser on misspellings, missing colons, index.html
  ['google: Disalow (typo) is Disallow', 'User-agent: *\nDisalow: /x\n', 'a', '/x', false],
  ['google: useragent (typo) is User-agent', 'useragent: a\nDisallow: /x\n', 'a', '/x', false],
  ['google: a missing colon', 'User-agent a\nDisallow /x\n', 'a', '/x', false],
  ['google: a missing colon with three words is no line', 'User-agent: a\nDisallow /x y\n', 'a', '/x', true],
  ['google: allowing /d/index.html allows /d/', 'User-agent: *\nAllow: /d/index.html\nDisallow: /\n', 'a', '/d/', true],
  ['google: ... and not /d/other', 'User-agent: *\nAllow: /d/index.html\nDisallow: /\n', 'a', '/d/other', false],
  // Byte-order marks, as Google's parser reads them
  ['bom: a full BOM is skipped', Buffer.concat([BOM, Buffer.from('User-Agent: foo\nDisallow: /x\n')]), 'foo', '/x', false],
  ['bom: a partial BOM (two bytes) is skipped', withBytes([0xef, 0xbb], 'User-Agent: foo\nDisallow: /x\n'), 'foo', '/x', false],
  ['bom: a partial BOM (one byte) is skipped', withBytes([0xef], 'User-Agent: foo\nDisallow: /x\n'), 'foo', '/x', false],
  ['bom: a broken BOM spoils the first line', withBytes([0xef, 0x11, 0xbf], 'User-Agent: foo\nDisallow: /x\n'), 'foo', '/x', true],
  ['bom: a mid-file BOM spoils its line only', Buffer.concat([Buffer.from('User-Agent: foo\n'), BOM, Buffer.from('Disallow: /x\nDisallow: /y\n')]), 'foo', '/x', true],
  ['bom: ... the next line still counts', Buffer.concat([Buffer.from('User-Agent: foo\n'), BOM, Buffer.from('Disallow: /x\nDisallow: /y\n')]), 'foo', '/y', false],
];

describe('RFC 9309 table', () => {
  test.each(rows)('%s', async (_what, robots, token, path, expected) => {
    expect(await allowed(robots, token, path)).toBe(expected);
  });
});

describe('parsing', () => {
  test('product tokens as Google reads them', () => {
    expect(userAgentToken('FOO BAR')).toBe('foo');
    expect(userAgentToken('svc-browse/1.0')).toBe('svc-browse');
    expect(userAgentToken('Foo_Bot2')).toBe('foo_bot');
    expect(userAgentToken('*')).toBe('*');
    expect(userAgentToken('* x')).toBe('*');
    expect(userAgentToken('*x')).toBeNull();
    expect(userAgentToken('2bot')).toBeNull();
  });

  test('groups: consecutive user-agent lines share one group; a rule ends it', () => {
    const groups = parseRobotsTxt('User-agent: a\nUser-agent: b\nDisallow: /x\nUser-agent: c\nAllow: /y\n');
    expect(groups.map((g) => g.agents)).toEqual([['a', 'b'], ['c']]);
    expect(groups[0].rules).toEqual([{ pattern: '/x', allow: false }]);
  });
});
