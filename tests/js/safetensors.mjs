// A small independent safetensors reader for the tests: {tensors: {name: {shape, data:
// Float64Array}}, metadata}, F32 and F16, written from the format's description (not the core's).
export function readSafetensors(bytes) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const base = 8 + n;
  const tensors = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [a, b] = t.data_offsets;
    const raw = buf.subarray(base + a, base + b);
    const count = t.shape.reduce((x, y) => x * y, 1);
    const data = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      if (t.dtype === 'F32') data[i] = raw.readFloatLE(4 * i);
      else if (t.dtype === 'F16') data[i] = f16(raw.readUInt16LE(2 * i));
      else throw new Error(`${name}: unexpected dtype ${t.dtype}`);
    }
    tensors[name] = { shape: t.shape, dtype: t.dtype, data };
  }
  return { tensors, metadata: header.__metadata__ ?? {} };
}

// IEEE half precision to a number.
export function f16(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
