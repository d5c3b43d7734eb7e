// The hostile-link corpus (hostile-links-lib.mjs) opened in Chromium with the page's content
// security policy: each link fresh (a new page) and again by hashchange (a page that is kept).
//
//   node tests/hardening/hostile-links.mjs --all            # every link of the corpus
//   node tests/hardening/hostile-links.mjs --sample 300     # a seeded sample with every kind
//   options: --seed N (default 1), --lanes N (pages side by side, default 2),
//            --mode fresh|hashchange|both (default both), --limit MS (settle limit, default 1000),
//            --alternate (each link once, fresh and hashchange in turn), --kind KIND (only links
//            of one kind), --match REGEX (only links whose note or hash matches), --link '#v=2&...' (one link of your own; repeatable)
//
// Prints each failure (kind, how opened, the link) and a summary: links tried, failures by kind,
// settle time median and max. Writes every result to build/hardening/hostile-links.json. Exit
// status 1 if any link failed. Uses build/site (CIRCUITSCOPE_SITE to change).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSite, hostileLinks, sampleLinks, openLinks, settleFigures, short } from './hostile-links-lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');

const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
if (!['--all', '--sample', '--link', '--match'].some((a) => args.includes(a))) {
  console.error('usage: node tests/hardening/hostile-links.mjs --all | --sample N | --match REGEX | --link HASH [--seed N] [--lanes N] [--mode fresh|hashchange|both] [--limit MS] [--kind KIND]');
  process.exit(2);
}
const seed = Number(opt('--seed', 1));
const lanes = Number(opt('--lanes', 2));
const limit = Number(opt('--limit', 1000));
const mode = opt('--mode', 'both');
const modes = mode === 'both' ? ['fresh', 'hashchange'] : [mode];

const loaded = await loadSite(site);
let links = hostileLinks(loaded, { seed });
const corpus = links.length;
if (opt('--kind')) links = links.filter((l) => l.kind === opt('--kind'));
if (opt('--match')) links = links.filter((l) => new RegExp(opt('--match')).test(`${l.note} ${l.hash.slice(0, 400)}`));
if (args.includes('--sample')) links = sampleLinks(links, Number(opt('--sample', 300)), seed);
if (args.includes('--link')) links = args.flatMap((a, i) => (args[i - 1] === '--link' ? [{ hash: a, kind: 'given', note: 'from the command line' }] : []));

console.log(`hostile links: ${links.length} of the corpus's ${corpus} (seed ${seed}), opened ${modes.join(' and ')}, ${lanes} lanes, settle limit ${limit} ms`);
const started = Date.now();
const results = await openLinks(links, {
  site, modes, lanes, limit, alternate: args.includes('--alternate'), defaultState: loaded.S.decodeHash('').state,
  onResult: (r, n, total) => {
    for (const f of r.failures) console.log(`FAIL ${f.kind} (${r.mode}, ${r.link.kind}: ${r.link.note}; opened ${r.opened}): ${f.what}\n  link: ${short(r.link.hash, 240)}`);
    if (n % 100 === 0) console.log(`  ${n} / ${total} opened, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  },
});
const seconds = (Date.now() - started) / 1000;

const byKind = {};
for (const r of results) for (const k of new Set(r.failures.map((f) => f.kind))) byKind[k] = (byKind[k] ?? 0) + 1;
const failed = results.filter((r) => r.failures.length);
const fig = (rs) => { const f = settleFigures(rs); return `median ${f.median.toFixed(0)} ms, 95th percentile ${f.p95?.toFixed(0)} ms, max ${f.max?.toFixed(0)} ms (${f.n} settled)`; };
const linkKinds = {};
for (const l of links) linkKinds[l.kind] = (linkKinds[l.kind] ?? 0) + 1;
console.log(`\nlinks: ${links.length} (${Object.entries(linkKinds).map(([k, n]) => `${k} ${n}`).join(', ')})`);
console.log(`opens: ${results.length}, failed: ${failed.length}; failures by kind: ${JSON.stringify(byKind)}`);
for (const m of modes) console.log(`settle (${m}): ${fig(results.filter((r) => r.mode === m))}`);
console.log(`settle (all): ${fig(results)}`);
console.log(`time: ${seconds.toFixed(0)} s`);

mkdirSync(path.join(root, 'build', 'hardening'), { recursive: true });
writeFileSync(path.join(root, 'build', 'hardening', 'hostile-links.json'), JSON.stringify({
  seed, modes, lanes, limit, corpus, links: links.length, seconds, byKind,
  settle: Object.fromEntries([...modes, 'all'].map((m) => [m, settleFigures(m === 'all' ? results : results.filter((r) => r.mode === m))])),
  results: results.map((r) => ({ kind: r.link.kind, note: r.link.note, hash: short(r.link.hash, 240), mode: r.mode, ms: r.ms, wall: r.wall, floor: r.floor, heard: r.heard, opened: r.opened, failures: r.failures })),
}, null, 1));
process.exit(failed.length ? 1 : 0);
