// A dependency-free static file server for the assembled site (build/site): correct MIME types
// (application/wasm, text/javascript for .mjs), the page's content security policy as a header,
// the cross-origin headers embeds need (CROSS_ORIGIN), no directory traversal, 404s, no caching.
// Run directly: `node scripts/serve.mjs [root]` (PORT env, default 8080, next free port if taken).
// From tests: `const { url, close } = await startServer({ port: 0 });`
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const DEFAULT_ROOT = path.resolve(here, '..', 'build', 'site');
const HOST = '127.0.0.1';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.safetensors': 'application/octet-stream',
};

// The page's content security policy (the same as index.html's <meta> tag), sent as a header so it
// also covers the training worker: no inline script, no eval, no third-party origin; WebAssembly
// may compile. It governs the site's own documents only (a host page keeps its own policy), and
// it has no frame-ancestors directive, nor is there an X-Frame-Options header, on purpose: any
// page may show the site in an iframe, including a course page opened from a file (which
// `frame-ancestors *` would refuse).
export const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data: blob:; worker-src 'self'; object-src 'none'; base-uri 'self'";

// What lets another origin use the site's files: its custom elements are module scripts, which
// load with CORS, as do what they fetch (models/*.json, the .safetensors models, the .wasm module)
// and the modules they import; stylesheets and images are read cross-origin too (CORP for hosts
// that set Cross-Origin-Embedder-Policy). The site holds no private data, so any origin may read it.
export const CROSS_ORIGIN = {
  'Access-Control-Allow-Origin': '*',
  'Cross-Origin-Resource-Policy': 'cross-origin',
};

export function contentType(file) {
  return MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

function send(res, status, body, extra = {}) {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    ...CROSS_ORIGIN,
    ...extra,
  });
  res.end(body);
}

// Maps a URL path to a file under root, or null if it would leave root.
export function resolvePath(root, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const rel = path.posix.normalize('/' + decoded.replace(/\\/g, '/'));
  const full = path.resolve(root, '.' + rel);
  if (full !== root && !full.startsWith(root + path.sep)) return null;
  return full;
}

function handler(root) {
  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
      return;
    }
    let pathname;
    try {
      pathname = new URL(req.url, 'http://localhost').pathname;
    } catch {
      send(res, 400, 'bad request\n');
      return;
    }
    let file = resolvePath(root, pathname);
    if (!file) {
      send(res, 404, 'not found\n');
      return;
    }
    try {
      let st = await stat(file);
      if (st.isDirectory()) {
        if (!pathname.endsWith('/')) {
          send(res, 301, 'moved\n', { Location: pathname + '/' });
          return;
        }
        file = path.join(file, 'index.html');
        st = await stat(file);
      }
      if (!st.isFile()) throw new Error('not a file');
      res.writeHead(200, {
        'Content-Type': contentType(file),
        'Content-Length': st.size,
        'Cache-Control': 'no-cache',
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': CSP,
        ...CROSS_ORIGIN,
      });
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      const stream = createReadStream(file);
      stream.on('error', () => res.destroy());
      stream.pipe(res);
    } catch {
      send(res, 404, 'not found\n');
    }
  };
}

function listen(server, port, host) {
  return new Promise((resolve, reject) => {
    const onError = (err) => {
      server.off('listening', onListening);
      reject(err);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/**
 * Starts the server. port 0 picks a free port; with fallback (default true for a fixed port),
 * a port in use makes it try the next ones. Resolves to { server, port, url, close() }.
 */
export async function startServer({ root = DEFAULT_ROOT, port = 0, host = HOST, fallback = true, tries = 20 } = {}) {
  const absRoot = path.resolve(root);
  const server = createServer(handler(absRoot));
  let p = Number(port);
  for (let i = 0; ; i++) {
    try {
      await listen(server, p, host);
      break;
    } catch (err) {
      if (err.code !== 'EADDRINUSE' || !fallback || p === 0 || i + 1 >= tries) throw err;
      p += 1;
    }
  }
  const actual = server.address().port;
  return {
    server,
    port: actual,
    url: `http://${host}:${actual}/`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (isMain) {
  const root = process.argv[2] ? path.resolve(process.argv[2]) : DEFAULT_ROOT;
  try {
    const st = await stat(path.join(root, 'index.html'));
    if (!st.isFile()) throw new Error();
  } catch {
    console.error(`serve: ${root}/index.html not found; run \`npm run build\` first`);
    process.exit(1);
  }
  const port = process.env.PORT ? Number(process.env.PORT) : 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve: PORT must be a port number, got "${process.env.PORT}"`);
    process.exit(1);
  }
  const { url } = await startServer({ root, port });
  console.log(`circuitscope is running at ${url}`);
  const stop = () => process.exit(0);
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
