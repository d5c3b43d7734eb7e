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

// ------------------------------------------------------------------------------------------------
// The induction view and its keystroke-to-rendered time, the Training view's in-browser run
// (shared by page.test.mjs, views.test.mjs and tests/bench/bench_browser.mjs).

/** The keystroke benchmark's text: 255 characters, so 256 tokens with <BOS> (char-2l's context). */
export const KEYSTROKE_TEXT = 'The cat sat on the mat and looked at the hat. '.repeat(6).slice(0, 255);

/** Waits until <cs-induction> has rendered with its model. */
export async function waitForInduction(page, timeout = 60_000) {
  await page.waitForSelector('cs-induction[data-ready="true"]', { timeout });
}

/**
 * Waits until the induction view has rendered `text` (tokens: text + <BOS>, at most 256) with
 * every row's loss (data-complete: the rows typed at the end come once typing pauses).
 */
export async function waitForText(page, text) {
  await page.waitForFunction((t) => {
    const v = document.querySelector('cs-induction');
    return v && v.dataset.ready === 'true' && v.dataset.complete === 'true' && v.state.text === t && v.lastResult &&
      v.lastResult.T === Math.min(t.length + 1, 256) && document.querySelector('cs-induction textarea').value === t;
  }, text, { timeout: 20_000 });
  // One more frame so that the render of this text is done.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/**
 * Times `count` keystrokes in the page's <cs-induction> (already rendered with its text): each
 * replaces the last character of the text and fires the textarea's input event, as typing does.
 * A keystroke's time runs from that event to the paint of the first frame that shows the
 * view's update: the first animation-frame callback that runs after the view has rendered (its
 * data-renders counter moved on) queues a task, and that task runs once the frame's style,
 * layout and paint are done. Nothing the user waits for is left out (the view's work, in the
 * input handler or in a later frame, and the browser's rendering of it).
 *
 * phase 'frame': the keystroke arrives as a frame begins (from an animation-frame callback), so
 *   the time is the work itself: no wait for the display. This is where the time of the work
 *   alone shows, and where a view that puts its update off to the next frame loses that frame.
 * phase 'random': the keystroke arrives at a random point of the 16.7 ms frame interval, as real
 *   keystrokes do, so the time also holds the wait for the display's next frame (8 ms on
 *   average at 60 Hz, whatever the page does).
 * Returns {times: [ms], T: tokens of the text}.
 */
export async function keystrokeTimes(page, { count = 20, phase = 'frame' } = {}) {
  return page.evaluate(async ({ count, phase }) => {
    const v = document.querySelector('cs-induction');
    const ta = v.querySelector('textarea');
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const renders = () => Number(v.dataset.renders);
    const painted = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const times = [];
    const tokens = [];   // the number of tokens after each keystroke
    for (let i = 0; i < count; i++) {
      await painted();
      times.push(await new Promise((resolve, reject) => {
        let t0 = 0;
        let before = 0;
        let frames = 0;
        const key = () => {
          before = renders();
          // Keep the length (and so the number of tokens): replace the last character.
          ta.value = ta.value.slice(0, -1) + letters[i % letters.length];
          t0 = performance.now();
          ta.dispatchEvent(new Event('input', { bubbles: true }));
        };
        const check = () => {
          if (renders() === before) {
            if (++frames > 10) reject(new Error('the view did not render within 10 frames of the keystroke'));
            else requestAnimationFrame(check);
            return;
          }
          setTimeout(() => { tokens.push(v.lastResult?.T ?? null); resolve(performance.now() - t0); }, 0);
        };
        if (phase === 'frame') {
          // Both callbacks run in the same coming frame, the keystroke first.
          requestAnimationFrame(key);
          requestAnimationFrame(check);
        } else {
          setTimeout(() => { key(); requestAnimationFrame(check); }, Math.random() * 1000 / 60);
        }
      }));
    }
    return { times, tokens, T: v.lastResult.T };
  }, { count, phase });
}

/** {median, min, max, n} of a list of numbers. */
export function summarize(values) {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  const median = n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN;
  return { median, min: s[0], max: s[n - 1], n };
}

/**
 * Trains a recipe of the Training view's "Train it yourself" (already on the page) to its end:
 * picks it, clicks Start and waits until the run has stopped. Returns what the view reports:
 * {steps, stepsPerSecond, trainSeconds, phaseChangeStep, phaseChangeSeconds} (the last two null
 * when the run recorded no head scores or no phase change).
 */
export async function trainInPage(page, recipe, { steps = null, timeout = 300_000 } = {}) {
  await page.selectOption('cs-training select[id$="-recipe"]', recipe);
  if (steps) await page.fill('cs-training input[id$="-steps"]', String(steps));
  await page.click('cs-training button:text-is("Start")');
  await page.waitForSelector('cs-training[data-train-state="running"]', { timeout });
  await page.waitForSelector('cs-training[data-train-state="stopped"]', { timeout });
  // The last chart and the rate are drawn in the next frame.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  return page.$eval('cs-training', (e) => {
    const num = (x) => (x === undefined || x === '' ? null : Number(x));
    return {
      steps: num(e.dataset.trainStep),
      stepsPerSecond: num(e.dataset.stepsPerSecond),
      trainSeconds: num(e.dataset.trainSeconds),
      phaseChangeStep: num(e.dataset.phaseChangeStep),
      phaseChangeSeconds: num(e.dataset.phaseChangeSeconds),
    };
  });
}
