// The Emscripten-generated module factory (build/wasm/circuitscope.mjs, not in the source tree) as
// wasm/circuitscope.js imports it: the Embind classes it uses are typed loosely here; the wrapper's
// own API is what wasm/circuitscope.d.ts types.
declare module '*/circuitscope.mjs' {
  const createCircuitscope: (options?: Record<string, unknown>) => Promise<any>;
  export default createCircuitscope;
}
declare module '*/circuitscope-relaxed.mjs' {
  const createCircuitscope: (options?: Record<string, unknown>) => Promise<any>;
  export default createCircuitscope;
}

// What the wrapper reads from node when it runs there (it does not need node's full types).
declare module 'node:fs/promises' {
  export function readFile(path: URL | string): Promise<Uint8Array>;
  export function access(path: URL | string): Promise<void>;
}
