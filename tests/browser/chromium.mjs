// The browser tests' harness. Launches Debian's Chromium with the flags this machine needs: headless,
// no sandbox as root, and no background networking (the closed network refuses it noisily).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

export const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium() {
  assert.ok(existsSync(executablePath), `${executablePath} is missing: apt-get install chromium`);
  return chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

// Serves `site` (scripts/serve.mjs) behind a proxy that adds a Content-Security-Policy header to
// every response, so workers and standalone pages run under the page's policy. `route(req, res,
// url)` may answer a request itself (returning true). Returns {origin, close()}.
export async function startCspProxy(site, csp, route = () => false) {
  const upstream = await startServer({ root: site, port: 0 });
  const proxy = http.createServer((req, res) => {
    if (route(req, res, new URL(req.url, 'http://x'))) return;
    const up = http.request({ host: '127.0.0.1', port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, { ...r.headers, 'content-security-policy': csp });
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${proxy.address().port}`,
    async close() {
      proxy.closeAllConnections?.();
      await new Promise((resolve) => proxy.close(() => resolve()));
      await upstream.close();
    },
  };
}
