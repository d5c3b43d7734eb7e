// Post-link step of the relaxed-SIMD WebAssembly build (CMakeLists.txt runs it on every module
// linked with -mrelaxed-simd): rewrites the pre-standard encoding of f32x4.relaxed_madd that
// Emscripten 3.1.6's clang 14 and binaryen 108 emit (0xfd 0xaf 0x01, once called f32x4.relaxed_fma)
// into the standard one (0xfd 0x85 0x02) that browsers and node ship. Both are three bytes, so
// the module is patched in place and no size or offset changes.
//
// The code section is decoded instruction by instruction (every immediate skipped by its
// encoding), so only an opcode is ever rewritten, never a byte of a constant, an offset or a
// v128.const. Any other pre-standard relaxed opcode, or an instruction this decoder does not
// know, is an error: the build fails rather than ship a module a browser would reject. The
// rewritten module is then checked with WebAssembly.validate (node's relaxed SIMD behind
// --experimental-wasm-relaxed-simd, set here through node:v8).
//   node scripts/wasm-relaxed-opcodes.mjs file.wasm [...]       rewrites each file in place
//   node scripts/wasm-relaxed-opcodes.mjs --check file.wasm      counts, changes nothing
import { readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';
import { pathToFileURL } from 'node:url';

// Standard SIMD sub-opcodes (after 0xfd) that are holes in the final SIMD128 opcode space but
// were relaxed-SIMD opcodes before relaxed SIMD was renumbered; the one this build uses maps to
// its standard number, the others are refused.
const PRE_STANDARD_MADD = 0xaf;
const STANDARD_MADD = 0x105;
const PRE_STANDARD_OTHERS = new Set([0xa2, 0xa5, 0xa6, 0xb0, 0xb2, 0xb3, 0xb4, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee]);

class Reader {
  constructor(bytes, pos, end) {
    this.b = bytes;
    this.pos = pos;
    this.end = end;
  }
  byte() {
    if (this.pos >= this.end) throw new Error(`unexpected end of data at byte ${this.pos}`);
    return this.b[this.pos++];
  }
  u32() {  // unsigned LEB128 (also used to skip u64 offsets)
    let result = 0, shift = 0, byte;
    do {
      byte = this.byte();
      if (shift < 32) result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if (shift > 70) throw new Error(`LEB128 too long at byte ${this.pos}`);
    } while (byte & 0x80);
    return result;
  }
  sleb() {  // signed LEB128, value not needed
    let byte, n = 0;
    do {
      byte = this.byte();
      if (++n > 10) throw new Error(`LEB128 too long at byte ${this.pos}`);
    } while (byte & 0x80);
  }
  skip(n) {
    if (this.pos + n > this.end) throw new Error(`unexpected end of data at byte ${this.pos}`);
    this.pos += n;
  }
  memarg() {
    const align = this.u32();
    if (align & 0x40) this.u32();  // memory index (multi-memory)
    this.u32();                    // offset
  }
}

const VALTYPES = new Set([0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f]);
function blocktype(r) {
  const t = r.b[r.pos];
  if (t === 0x40 || VALTYPES.has(t)) r.pos++;
  else r.sleb();  // s33 type index
}

// One instruction at r.pos. Returns the 0xfd sub-opcode and where it starts, or null.
function instruction(r) {
  const op = r.byte();
  if (op <= 0x01 || op === 0x05 || op === 0x0a || op === 0x0b || op === 0x0f || op === 0x19 ||
      op === 0x1a || op === 0x1b || op === 0xd1 || (op >= 0x45 && op <= 0xc4)) return null;
  switch (op) {
    case 0x02: case 0x03: case 0x04: case 0x06: blocktype(r); return null;  // block loop if try
    case 0x07: case 0x08: case 0x09: case 0x0c: case 0x0d: case 0x10: case 0x12: case 0x18:
    case 0x20: case 0x21: case 0x22: case 0x23: case 0x24: case 0x25: case 0x26: case 0x3f: case 0x40:
    case 0xd2:
      r.u32(); return null;  // catch throw rethrow br br_if call return_call delegate locals globals tables memory ref.func
    case 0x0e: {  // br_table
      const n = r.u32();
      for (let i = 0; i <= n; i++) r.u32();
      return null;
    }
    case 0x11: case 0x13: r.u32(); r.u32(); return null;  // call_indirect, return_call_indirect
    case 0x1c: { const n = r.u32(); r.skip(n); return null; }  // select t*
    case 0x41: case 0x42: r.sleb(); return null;
    case 0x43: r.skip(4); return null;
    case 0x44: r.skip(8); return null;
    case 0xd0: blocktype(r); return null;  // ref.null heaptype (a byte or an s33 index)
    case 0xfc: {
      const sub = r.u32();
      if (sub <= 7) return null;
      if ([9, 11, 13, 15, 16, 17].includes(sub)) { r.u32(); return null; }
      if ([8, 10, 12, 14].includes(sub)) { r.u32(); r.u32(); return null; }
      throw new Error(`unknown instruction 0xfc ${sub} at byte ${r.pos}`);
    }
    case 0xfd: {
      const at = r.pos;
      const sub = r.u32();
      if (sub <= 0x0b || sub === 0x5c || sub === 0x5d) r.memarg();
      else if (sub === 0x0c || sub === 0x0d) r.skip(16);  // v128.const, i8x16.shuffle
      else if (sub >= 0x15 && sub <= 0x22) r.skip(1);     // extract/replace lane
      else if (sub >= 0x54 && sub <= 0x5b) { r.memarg(); r.skip(1); }  // load/store lane
      else if (sub > 0x113) throw new Error(`unknown SIMD instruction 0xfd ${sub} at byte ${at}`);
      return { sub, at, len: r.pos - at };
    }
    case 0xfe: {  // atomics
      const sub = r.u32();
      if (sub === 0x03) r.skip(1);
      else r.memarg();
      return null;
    }
    default:
      if (op >= 0x28 && op <= 0x3e) { r.memarg(); return null; }
      throw new Error(`unknown instruction 0x${op.toString(16)} at byte ${r.pos - 1}`);
  }
}

function leb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

/** Rewrites bytes in place; returns {functions, rewritten, standard} counts. */
export function rewrite(bytes) {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new Error('not a WebAssembly module');
  }
  const top = new Reader(bytes, 8, bytes.length);
  const counts = { functions: 0, rewritten: 0, standard: 0 };
  const madd = leb(STANDARD_MADD);
  while (top.pos < top.end) {
    const id = top.byte();
    const size = top.u32();
    const start = top.pos, end = start + size;
    if (id === 10) {
      const r = new Reader(bytes, start, end);
      const n = r.u32();
      for (let f = 0; f < n; f++) {
        const bodySize = r.u32();
        const body = new Reader(bytes, r.pos, r.pos + bodySize);
        const groups = body.u32();
        for (let g = 0; g < groups; g++) {
          body.u32();
          const t = body.byte();
          if (!VALTYPES.has(t)) throw new Error(`function ${f}: unknown local type 0x${t.toString(16)}`);
        }
        while (body.pos < body.end) {
          const simd = instruction(body);
          if (!simd) continue;
          if (simd.sub === STANDARD_MADD) counts.standard++;
          else if (simd.sub === PRE_STANDARD_MADD) {
            if (simd.len !== madd.length) throw new Error(`function ${f}: relaxed_madd at byte ${simd.at} is not encoded in ${madd.length} bytes`);
            bytes.set(madd, simd.at);
            counts.rewritten++;
          } else if (PRE_STANDARD_OTHERS.has(simd.sub)) {
            throw new Error(`function ${f}: pre-standard relaxed SIMD opcode 0xfd 0x${simd.sub.toString(16)} at byte ${simd.at} (only relaxed_madd is rewritten)`);
          }
        }
        if (body.pos !== body.end || bytes[body.end - 1] !== 0x0b) throw new Error(`function ${f}: body does not end where its size says`);
        r.pos = body.end;
        counts.functions++;
      }
      if (r.pos !== end) throw new Error('code section does not end where its size says');
    }
    top.pos = end;
  }
  return counts;
}

// The smallest module with one f32x4.relaxed_madd (standard encoding): (func (param v128 v128
// v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd). The page's loader
// (wasm/circuitscope.js) validates the same bytes to decide which module to load.
export const RELAXED_PROBE = Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1, 0,
  10, 13, 1, 11, 0, 32, 0, 32, 1, 32, 2, 253, 133, 2, 11);

function main(argv) {
  const check = argv[0] === '--check';
  const files = check ? argv.slice(1) : argv;
  if (!files.length) {
    console.error('usage: node scripts/wasm-relaxed-opcodes.mjs [--check] file.wasm ...');
    process.exit(2);
  }
  v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  if (!WebAssembly.validate(RELAXED_PROBE)) throw new Error('this node does not validate relaxed SIMD even with --experimental-wasm-relaxed-simd');
  for (const file of files) {
    const bytes = new Uint8Array(readFileSync(file));
    const c = rewrite(bytes);
    if (c.rewritten + c.standard === 0) throw new Error(`${file}: no f32x4.relaxed_madd found (was it built with -mrelaxed-simd?)`);
    if (!WebAssembly.validate(bytes)) throw new Error(`${file}: the rewritten module does not validate`);
    if (!check && c.rewritten) writeFileSync(file, bytes);
    console.log(`${file}: ${c.functions} functions, ${c.rewritten} relaxed_madd ${check ? 'to rewrite' : 'rewritten'}, ${c.standard} already standard; validates`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(`wasm-relaxed-opcodes: ${e.message}`);
    process.exit(1);
  }
}
