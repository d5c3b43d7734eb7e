// Mocks: a panel's recorded query result, kept beside the panel as panels/VIEW/mocks/PART.json
// (as CircuitsVis keeps mocks/ beside each visualisation), so a panel can be drawn, looked at and
// tested without a model, a WebAssembly module or a trained file. `npm run mocks` records them
// (scripts/mocks.mjs: each panel alone in Chromium, on the small state the file names);
// tests/browser/mocks.test.mjs draws each one with no model loaded and checks that what the
// panel's query returns today still has the recorded shape.
//
// A mock file is {panel, attrs, data}: `attrs` the <cs-panel> attributes it was recorded with,
// `data` the query's result in JSON, with typed arrays as {"$typed": "Float32Array", "base64":
// ...} (their bytes, so the numbers are the recorded ones exactly) and non-finite numbers as
// {"$number": "NaN" | "Infinity" | "-Infinity"}. A panel's data must be plain (objects, arrays,
// strings, numbers, booleans, null, typed arrays): encodeMock refuses anything else, such as a
// model handle, by its path in the data, since a panel draws from its data alone.

const TYPED = {
  Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array, Uint8ClampedArray,
};

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(text) {
  const s = atob(text);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

const typedName = (v) => (ArrayBuffer.isView(v) && !(v instanceof DataView) ? v.constructor.name : null);
const isPlainObject = (v) => {
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
};

/** `data` as JSON-ready values (see the header); throws, naming the path, on what is not plain data. */
export function encodeMock(data) {
  const seen = new Set();
  const walk = (v, path) => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (v === undefined) return null;
    if (typeof v === 'number') return Number.isFinite(v) ? v : { $number: String(v) };
    if (typeof v !== 'object') throw new Error(`mock: ${path} is a ${typeof v}; a panel's data must be plain data`);
    const typed = typedName(v);
    if (typed) {
      if (!TYPED[typed]) throw new Error(`mock: ${path} is a ${typed}, which a mock cannot hold`);
      return { $typed: typed, base64: toBase64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) };
    }
    if (seen.has(v)) throw new Error(`mock: ${path} refers back to an object that holds it`);
    seen.add(v);
    let out;
    if (Array.isArray(v)) out = v.map((x, i) => walk(x, `${path}[${i}]`));
    else if (isPlainObject(v)) {
      out = {};
      for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = walk(x, `${path}.${k}`);
    } else throw new Error(`mock: ${path} is a ${v.constructor?.name ?? 'object'}, not plain data (a panel's data must not hold a model or a DOM node)`);
    seen.delete(v);
    return out;
  };
  return walk(data, 'data');
}

/** The data encodeMock encoded, with its typed arrays and non-finite numbers back. */
export function decodeMock(json) {
  const walk = (v) => {
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v.$typed === 'string' && typeof v.base64 === 'string') {
      const T = TYPED[v.$typed];
      if (!T) throw new Error(`mock: unknown typed array "${v.$typed}"`);
      const bytes = fromBase64(v.base64);
      return new T(bytes.buffer, 0, bytes.byteLength / T.BYTES_PER_ELEMENT);
    }
    if (typeof v.$number === 'string' && Object.keys(v).length === 1) return Number(v.$number);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
  };
  return walk(json);
}

/**
 * The shape of a panel's data, as a string: each object's keys with the shapes of their values,
 * arrays as the shapes their elements take, typed arrays by type; numbers, strings and booleans
 * by kind, so that the same state gives the same shape whatever the numbers. What the mocks test
 * compares between a mock and a live query (a key added, dropped or of another kind).
 */
export function mockShape(data) {
  const walk = (v) => {
    if (v === null || v === undefined) return 'null';
    if (typeof v !== 'object') return typeof v;
    const typed = typedName(v);
    if (typed) return typed;
    if (Array.isArray(v)) {
      const kinds = [...new Set(v.map(walk))].sort();
      return `[${kinds.join('|')}]`;
    }
    return `{${Object.keys(v).filter((k) => v[k] !== undefined).sort().map((k) => `${k}:${walk(v[k])}`).join(',')}}`;
  };
  return walk(data);
}
