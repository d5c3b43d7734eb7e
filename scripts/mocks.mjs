// `npm run mocks [PANEL...]`: records each panel's query result as its mock, web/panels/VIEW/mocks/
// PART.json (web/panels/mock.js), by mounting the panel alone in Chromium on the built site
// (build/site, from `npm run build`) in a small state (tests/browser/mock-record.mjs). With panel
// names, only those. Run it after changing what a panel's query returns: the mocks test
// (tests/browser/mocks.test.mjs) fails while a mock's shape differs from the live query's.
// Each mock is also written into build/site, so the mocks test (which serves the built site)
// reads the new ones without assembling the site again.
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launchChromium } from '../tests/browser/chromium.mjs';
import { root, panelFiles, recordAttrs, blankPage, recordPanel } from '../tests/browser/mock-record.mjs';

const site = path.join(root, 'build', 'site');
if (!existsSync(path.join(site, 'panels', 'panel.js'))) {
  console.error('build/site is missing: run `npm run build` first');
  process.exit(1);
}
const { PANELS } = await import(new URL('../build/site/store.js', import.meta.url).href);
const asked = process.argv.slice(2);
for (const n of asked) if (!PANELS.includes(n)) { console.error(`"${n}" is not a panel; the panels are: ${PANELS.join(', ')}`); process.exit(2); }

const server = await startServer({ root: site, port: 0 });
const browser = await launchChromium();
let failed = 0;
try {
  const { page, errors } = await blankPage(browser, `http://127.0.0.1:${server.port}`);
  for (const name of asked.length ? asked : PANELS) {
    const attrs = recordAttrs(name);
    try {
      const { state, data } = await recordPanel(page, name, attrs);
      const file = panelFiles(name).mock;
      mkdirSync(path.dirname(file), { recursive: true });
      const text = `${JSON.stringify({ panel: name, attrs, state, data })}\n`;
      writeFileSync(file, text);
      const built = path.join(site, path.relative(path.join(root, 'web'), file));
      mkdirSync(path.dirname(built), { recursive: true });
      writeFileSync(built, text);
      console.log(`${name.padEnd(24)} ${(text.length / 1024).toFixed(1).padStart(7)} KB  ${path.relative(root, file)}`);
    } catch (e) {
      failed++;
      console.error(`${name}: ${e.message}`);
    }
  }
  if (errors.length) console.error(`console errors:\n  ${errors.join('\n  ')}`);
} finally {
  await browser.close();
  await server.close();
}
process.exit(failed ? 1 : 0);
