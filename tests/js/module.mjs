// Loads the built WASM module's JS wrapper (build/wasm/circuitscope.js) once for a test file.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const wrapper = path.join(root, 'build', 'wasm', 'circuitscope.js');

let modulePromise = null;
// The wrapper's exports (load, trainer, init, at, argmax, ...): build/wasm/circuitscope.js is
// wasm/circuitscope.js copied, so its declarations are that file's.
/** @returns {Promise<typeof import('../../wasm/circuitscope.js')>} */
export function wrapperModule() {
  if (!modulePromise) {
    assert.ok(existsSync(wrapper), `${path.relative(root, wrapper)} is missing: run \`npm run build\` first`);
    modulePromise = import(pathToFileURL(wrapper).href);
  }
  return modulePromise;
}

let instancePromise = null;
// An initialised module instance (the wrapper's init()).
/** @returns {Promise<import('../../wasm/circuitscope.js').Circuitscope>} */
export function cs() {
  if (!instancePromise) instancePromise = wrapperModule().then((m) => m.init());
  return instancePromise;
}
