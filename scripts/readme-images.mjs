// The README's two pictures, taken from the built site (build/site) in Chromium:
//   web/img/lesson.png  a lesson step beside its live view ("What an induction head is", step 4,
//                       after the reader ablated the previous-token head: the check is green)
//   web/img/embed.png   one panel embedded in another page, from another origin, sized to its
//                       content by embed.js (the code the panel's Embed button copies)
// Usage: node scripts/readme-images.mjs   (after scripts/build.sh site; about 20 s)
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../tests/browser/chromium.mjs';
import { startServer } from './serve.mjs';
import { VIEW_SETTLED } from '../tests/browser/settled.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'web', 'img');
mkdirSync(out, { recursive: true });
const site = await startServer({ root: path.join(root, 'build', 'site'), port: 0 });
const origin = `http://127.0.0.1:${site.port}`;
const browser = await launchChromium();
try {
  // A lesson step: open step 4, ablate L0H1 as the step asks, wait for the green check.
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
  await page.goto(`${origin}/#v=2&lesson=induction-heads&step=3&view=induction&model=char-2l&head=L1H1&done=0,1,2`);
  await page.waitForFunction(VIEW_SETTLED, 0, { timeout: 60_000 });
  await page.click('cs-induction button[aria-label="Ablate L0H1"]');
  await page.waitForSelector('.cs-lesson-check[data-met="true"]', { timeout: 60_000 });
  await page.evaluate(() => { window.scrollTo(0, 0); document.querySelector('.lesson-host')?.scrollTo(0, 170); });
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(out, 'lesson.png') });
  console.log(`wrote ${path.join(out, 'lesson.png')}`);

  // An embed: a host page on another origin with the iframe code and the one host line.
  const frame = `${origin}/#v=2&view=induction&model=char-2l&text=${encodeURIComponent('The cat sat on the mat. The cat sat on the mat.')}&embed=1&panel=induction-tokens&hide=controls,header`;
  const hostPage = `<!doctype html><meta charset="utf-8"><title>Course notes</title>
<body style="font: 16px/1.5 Georgia, serif; max-width: 760px; margin: 24px auto; color: #222">
<h1 style="font-size: 24px">Week 3: induction heads</h1>
<p>Below, a two-layer model reads a sentence written twice. Each character is coloured by how surprised the model was: the second copy is almost free, because an induction head copies it from the first.</p>
<iframe src="${frame.replace(/&/g, '&amp;')}" title="circuitscope: per-token loss" width="100%" height="480" style="border:1px solid #ccc; border-radius: 6px"></iframe>
<script src="${origin}/embed.js" async></script>
<p>Hover a character to see what the model predicts next.</p></body>`;
  const host = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end(hostPage); });
  await new Promise((r) => host.listen(0, 'localhost', r));
  const hp = await browser.newPage({ viewport: { width: 900, height: 760 }, colorScheme: 'light' });
  await hp.goto(`http://localhost:${host.address().port}/`);
  await hp.waitForFunction(() => Number(document.querySelector('iframe')?.getAttribute('height')) !== 480, null, { timeout: 60_000 });
  const f = hp.frames().find((x) => x.url().startsWith(origin));
  await f.hover('.cs-panel [data-pos="30"]').catch(() => {});
  await hp.waitForTimeout(500);
  await hp.screenshot({ path: path.join(out, 'embed.png'), fullPage: true });
  console.log(`wrote ${path.join(out, 'embed.png')}`);
  host.close();
} finally {
  await browser.close();
  await site.close();
}
