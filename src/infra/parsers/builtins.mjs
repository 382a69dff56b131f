// pdfjs-dist's legacy build bundles core-js polyfills, and some of them *replace* built-ins that
// Node already has, process-wide, as soon as the module is evaluated: on Node 20 it swaps the native
// Array.prototype.push for a JavaScript version (core-js' fix for V8 edge cases with array-likes
// longer than 2^32 - 1 and non-writable lengths, which nothing here relies on). Every push in the
// process then goes through it, which made exceljs, saxes and the engine ~40 % slower in a parse
// runner that had loaded pdfjs. `keepBuiltins` loads modules and puts back any built-in method
// they replaced; what they add (Promise.withResolvers, the Set methods…) stays, pdfjs needs it.
// Plain JavaScript so the child bootstrap can use it before the TypeScript loader is registered.

const intrinsics = () => {
  const typedArray = Object.getPrototypeOf(Uint8Array);
  return [
    Array, Array.prototype, Object, Object.prototype, Function.prototype, String, String.prototype,
    Number, Number.prototype, Boolean.prototype, Symbol, Symbol.prototype, Promise, Promise.prototype,
    Map, Map.prototype, Set, Set.prototype, WeakMap.prototype, WeakSet.prototype, Math, JSON, Reflect,
    RegExp.prototype, Date, Date.prototype, Error, Error.prototype, ArrayBuffer, ArrayBuffer.prototype,
    DataView.prototype, typedArray, typedArray.prototype, Uint8Array, Uint8Array.prototype,
  ];
};

/** Runs `load` (module imports) and restores every built-in method it replaced. */
export async function keepBuiltins(load) {
  const saved = [];
  for (const target of intrinsics()) {
    for (const key of Reflect.ownKeys(target)) {
      const d = Object.getOwnPropertyDescriptor(target, key);
      if (d && typeof d.value === 'function') saved.push([target, key, d]);
    }
  }
  try {
    return await load();
  } finally {
    for (const [target, key, d] of saved) {
      const now = Object.getOwnPropertyDescriptor(target, key);
      if (!now || now.value !== d.value) Object.defineProperty(target, key, d);
    }
  }
}
