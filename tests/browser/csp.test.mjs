// The content security policy, as the project's own server sends it (scripts/serve.mjs): from
// the page and from the training worker, an inline script, eval and a request to another origin
// are each refused. The other origin is a second local server that counts the requests it gets.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.mjs';
import { startServer, CSP } from '../../scripts/serve.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');

let server;
let other;
let otherHits = 0;
let browser;

before(async () => {
  server = await startServer({ root: site, port: 0 });
  other = http.createServer((req, res) => {
    otherHits += 1;
    res.writeHead(200, { 'Access-Control-Allow-Origin': '*', 'Content-Type': 'text/javascript' });
    res.end('globalThis.__fromOtherOrigin = 1;');
  });
  await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((resolve) => other?.close(() => resolve()));
});

// Code run through the DevTools protocol is exempt from the policy's eval rule, so eval and
// new Function are tried by a script of the page's own origin (served with the same header), in
// the page and in a worker; the rest is tried directly.
const PROBE = `const out = {};
try { out.eval = String(eval('6 * 7')); } catch (e) { out.eval = 'refused: ' + e.name; }
try { out.fn = String(new Function('return 6 * 7')()); } catch (e) { out.fn = 'refused: ' + e.name; }
if (typeof window === 'undefined') postMessage(out); else window.__probe = out;`;

/** In the page or the worker: a request and a module import from another origin, and an inline script. */
async function tryForbidden(target, otherUrl, { inlineScript }) {
  return target.evaluate(async ({ otherUrl, inlineScript }) => {
    const out = {};
    try { await fetch(`${otherUrl}/fetch`); out.fetch = 'allowed'; } catch (e) { out.fetch = `refused: ${e.name}`; }
    try { await import(`${otherUrl}/module.js`); out.import = 'allowed'; } catch (e) { out.import = `refused: ${e.name}`; }
    if (inlineScript) {
      const s = document.createElement('script');
      s.textContent = 'window.__inline = 1;';
      document.body.append(s);
      await new Promise((r) => setTimeout(r, 50));
      out.inline = window.__inline === 1 ? 'allowed' : 'refused';
    } else {
      try { await import('data:text/javascript,globalThis.__inline = 1'); out.inline = 'allowed'; } catch (e) { out.inline = `refused: ${e.name}`; }
    }
    return out;
  }, { otherUrl, inlineScript });
}

test('the page and its worker refuse an inline script, eval and another origin (the CSP is sent as a header)', async (t) => {
  const res = await fetch(server.url);
  assert.equal(res.headers.get('content-security-policy'), CSP, 'the server sends the policy');
  const context = await browser.newContext();
  const page = await context.newPage();
  const violations = [];
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text().slice(0, 80)); });
  await page.route('**/__csp-probe.js', (route) => route.fulfill({ status: 200, contentType: 'text/javascript', headers: { 'Content-Security-Policy': CSP }, body: PROBE }));
  try {
    const worker = await fetch(`${server.url}trainer-worker.js`);
    assert.equal(worker.headers.get('content-security-policy'), CSP, 'the worker script comes with the policy');
    await page.goto(`${server.url}#v=2&view=training`);
    await page.waitForSelector('cs-training[data-ready="true"]', { timeout: 60_000 });
    const otherUrl = `http://127.0.0.1:${other.address().port}`;
    const fromPage = await tryForbidden(page, otherUrl, { inlineScript: true });
    Object.assign(fromPage, await page.evaluate(async () => {
      const s = document.createElement('script');
      s.src = '/__csp-probe.js';
      await new Promise((resolve, reject) => { s.onload = resolve; s.onerror = reject; document.body.append(s); });
      const inWorker = await new Promise((resolve) => {
        const w = new Worker('/__csp-probe.js');
        w.onmessage = (e) => { resolve(e.data); w.terminate(); };
      });
      return { ...window.__probe, workerEval: inWorker.eval, workerFn: inWorker.fn };
    }));
    // The training worker starts with a run.
    await page.selectOption('cs-training select[id$="-recipe"]', 'ioi-1l2h');
    await page.fill('cs-training input[id$="-steps"]', '5');
    const workerSeen = page.waitForEvent('worker', { predicate: (w) => /trainer-worker/.test(w.url()), timeout: 60_000 });
    await page.click('cs-training button:text-is("Start")');
    const fromWorker = await tryForbidden(await workerSeen, otherUrl, { inlineScript: false });
    t.diagnostic(`page: ${JSON.stringify(fromPage)}; worker: ${JSON.stringify(fromWorker)}; ${violations.length} violations reported`);
    for (const k of ['eval', 'fn', 'workerEval', 'workerFn', 'fetch', 'import', 'inline']) assert.match(fromPage[k], /^refused/, `page: ${k} is refused (${fromPage[k]})`);
    for (const k of ['fetch', 'import', 'inline']) assert.match(fromWorker[k], /^refused/, `training worker: ${k} is refused (${fromWorker[k]})`);
    assert.equal(otherHits, 0, 'no request reached the other origin');
    assert.ok(violations.length >= 1, 'the browser reported the violations');
  } finally {
    await context.close();
  }
});
