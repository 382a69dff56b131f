import { describe, expect, test } from 'vitest';
import { canonicalJson } from './jcs';

const text = (v: unknown) => canonicalJson(v).toString('utf8');

/** The IEEE 754 double with these bits. */
function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe('RFC 8785 canonical JSON', () => {
  // RFC 8785 Appendix B (number serialisation samples), hard-coded from the RFC.
  test.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'], // minus zero
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
  ])('number %s → %s', (bits, expected) => {
    expect(text(fromBits(bits))).toBe(expected);
  });

  // cyberphone/json-canonicalization (the RFC authors' reference repo), testdata/input|output/values.json.
  test('values.json: numbers, escaping, literals', () => {
    const input = JSON.parse('{\n  "numbers": [1E30, 4.50, 333333333.33333329, 2e-3, 0.000000000000000000000000001],\n  "escaping": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n  "literals": [null, true, false]\n}');
    expect(text(input)).toBe('{"escaping":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/","literals":[null,true,false],"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}');
  });

  // Same repo, testdata/input|output/weird.json: keys sorted by UTF-16 code units (the emoji's surrogate
  // pair sorts before U+FB33 though its code point is larger), non-ASCII kept raw in UTF-8.
  test('weird.json: key order by UTF-16 code units, unicode strings', () => {
    const input = JSON.parse('{\n  "\\u20ac": "Euro Sign",\n  "1": "One",\n  "\\u0080": "Control\\u007f",\n  "\\ud83d\\ude02": "Smiley",\n  "\\u00f6": "Latin Small Letter O With Diaeresis",\n  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n  "</script>": "Browser Challenge"\n}\n');
    const out = canonicalJson(input);
    expect(out.toString('utf8')).toBe('{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude02":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}');
    expect(out.subarray(0, 8).toString('hex')).toBe('7b2231223a224f6e'); // raw bytes, no BOM
    expect(out.includes(Buffer.from('f09f9882', 'hex'))).toBe(true); // 😂 as 4 UTF-8 bytes, not \ud83d\ude02
  });

  test('nested structures and undefined members', () => {
    expect(text({ b: [1, { d: 2, c: [] }], a: {}, u: undefined })).toBe('{"a":{},"b":[1,{"c":[],"d":2}]}');
  });

  test('values with no canonical form are refused', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow();
    expect(() => canonicalJson(Number.POSITIVE_INFINITY)).toThrow();
    expect(() => canonicalJson('\ud800')).toThrow();
    expect(() => canonicalJson(undefined)).toThrow();
    expect(() => canonicalJson(10n)).toThrow();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow();
  });
});
