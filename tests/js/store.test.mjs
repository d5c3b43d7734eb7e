// The page's store (web/store.js, as built into build/site): its link codec as a property over
// random states and action sequences (encode, decode, compare), version-1 links, hostile links
// (which give the default state and a sentence, never an exception), and the intervention that
// a state's cuts expand to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rng } from '../rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const S = await import(pathToFileURL(path.join(site, 'store.js')).href);

const head = (r) => `L${r.int(3)}H${r.int(4)}`;
const end = (r) => (r.next() < 0.2 ? '*' : head(r));
const TEXTS = ['', 'a', 'Hello hello', 'é ✓ 😀 \u0301 שלום', 'x'.repeat(5000), 'The cat. '.repeat(300), '%&=#?+'];

/** A random action of any kind the page dispatches (a lone panel is one of the state's view). */
function randomAction(r, state) {
  switch (r.int(9)) {
    case 8: return { type: 'set', values: { panel: r.pick([null, ...S.PANELS.filter((p) => p.startsWith(`${state.view}-`))]) } };
    case 0: return { type: 'view', view: r.pick(S.VIEWS), model: r.pick([null, 'char-2l']) };
    case 1: return { type: 'model', model: r.pick(['char-2l', 'char-1l', 'ioi-1l2h', 'ioi-templates-2l', 'local:my-model_1.2', 'local:char-2l-2']) };
    case 2: return { type: 'snapshot', snapshot: r.pick([null, 'step0', 'step1000']) };
    case 3: return { type: 'toggleAblate', head: head(r) };
    case 4: return { type: 'toggleCut', cut: `${end(r)}>${end(r)}.${r.pick(['q', 'k', 'v'])}` };
    case 5: return { type: 'set', values: { text: r.pick(TEXTS) + r.int(100), pos: r.pick([null, r.int(300)]) } };
    case 6: return r.next() < 0.5 ? { type: 'set', values: { head: r.pick([null, head(r)]), nopos: r.next() < 0.5 } }
      : { type: 'lesson', lesson: r.pick([null, 'index', 'induction-heads', 'ioi-circuit']), step: r.int(12),
        state: r.pick([null, { view: 'ioi', model: 'ioi-2l1h', cut: ['*>*.v'] }, { view: 'induction', text: r.pick(TEXTS) }]),
        lessonText: r.pick([undefined, '# L\n\n## s\n', r.pick(TEXTS)]) };
    default: return {
      type: 'set',
      values: r.pick([{ order: r.pick(['IOSS', 'SIOS']) }, { io: r.pick(['Mary', 'Zoe', '', 'a b']) }, { s: 'John' }, { tpl: r.int(12) },
        { place: 'store' }, { object: 'drink' }, { names: 'Ann,Bo,Cy,Di,Ed,Flo' }, { sort: r.pick(['token', 'row', 'col', 'both']) },
        { top: r.pick(['all', '80', '40', '20', '10']) }, { zoom: 3 + r.int(26) }, { embed: r.next() < 0.5 }, { hide: ['controls'] },
        { done: r.pick([[], ['0'], ['2', '0', '11'], [String(r.int(100))]]) }, { patch: r.pick([null, 'denoise', 'noise']) },
        { abl: r.pick(S.ABLATIONS) }]),
    };
  }
}

test('store: 2,000 random action sequences encode to links that decode to the same state', () => {
  for (let n = 0; n < 2000; n++) {
    const r = rng(n + 1);
    const store = S.createStore();
    const actions = [];
    for (let i = 1 + r.int(12); i > 0; i--) {
      actions.push(randomAction(r, store.state));
      store.dispatch(actions.at(-1));
    }
    const hash = S.encodeState(store.state);
    const { state, error } = S.decodeHash(`#${hash}`);
    assert.equal(error, null, `sequence ${n}: ${JSON.stringify(actions)} -> ${hash.slice(0, 200)}`);
    assert.deepEqual(state, { ...store.state }, `sequence ${n}`);
    assert.equal(S.encodeState(state), hash, `sequence ${n}: encoding is stable`);
  }
});

test('store: actions that change nothing notify no one; a model switch clears what belonged to the old model', () => {
  const store = S.createStore();
  let calls = 0;
  store.subscribe(() => { calls += 1; });
  store.dispatch({ type: 'set', values: { head: null } });
  assert.equal(calls, 0);
  assert.equal(store.version, 0);
  store.dispatch({ type: 'toggleAblate', head: 'L0H1' });
  store.dispatch({ type: 'set', values: { head: 'L1H2', snapshot: 'step100', text: 'abc' } });
  assert.equal(calls, 2);
  store.dispatch({ type: 'model', model: 'char-1l' });
  assert.deepEqual([store.state.ablate, store.state.head, store.state.snapshot, store.state.text], [[], null, null, 'abc'],
    'heads, ablations and the snapshot go with the model; the text stays');
  assert.ok(Object.isFrozen(store.state));
});

test('store: version-1 links still open, with their IOI cut and positions switch upgraded', () => {
  const cases = [
    ['#v=1&view=ioi&model=ioi-2l1h&cut=V&removePos=%221%22', { view: 'ioi', model: 'ioi-2l1h', cut: ['*>*.v'], nopos: true }],
    ['#v=1&view=ioi&io=%22A%22&s=%22B%22&order=SIOS', { view: 'ioi', io: 'A', s: 'B', order: 'SIOS' }],
    ['#v=1&model=char-2l&head=L1H2&ablate=L0H1,L1H3&cut=L0H1>L1H2.k&nopos=1', { model: 'char-2l', head: 'L1H2', ablate: ['L0H1', 'L1H3'], cut: ['L0H1>L1H2.k'], nopos: true }],
    ['#v=1&view=circuits&sort=%22both%22&top=%2220%22&zoom=%2214%22', { view: 'circuits', sort: 'both', top: '20', zoom: 14 }],
  ];
  for (const [hash, want] of cases) {
    const { state, error } = S.decodeHash(hash);
    assert.equal(error, null, hash);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(state[k], v, `${hash}: ${k}`);
  }
});

test('store: hostile links give the default state and a sentence, never an exception', () => {
  const hostile = ['#v=2&constructor=1', '#v=2&__proto__=1&toString=2', '#v=2&tz=@@@', '#v=2&view=<script>',
    '#v=2&head=L1H2"onload=1', '#v=99', '#v=x', '#nothing', `#v=2&text=${'a'.repeat(70_000)}`, '#v=2&ablate=' + 'L0H0,'.repeat(300),
    '#v=2&pos=-1', '#v=2&zoom=2.5', '#v=2&tpl=1e3', '#%E0%A4%A', '#v=2&cut=L0H1>L1H2.x', '#v=2&hide=everything',
    '#v=2&patch=both', '#v=2&patch=', '#v=2&view=ioi&patch=Denoise', '#v=2&view=ioi&abl=average', '#v=2&abl=', '#v=2&abl=Mean',
    '#v=2&panel=nosuch-panel', '#v=2&embed=1&panel=../panel', '#v=2&embed=1&panel=ioi-heads', '#v=2&view=ioi&panel=induction-tokens', '#v=2&panel=constructor'];
  for (const hash of hostile) {
    const { state, error } = S.decodeHash(hash);
    const fresh = S.decodeHash('').state;
    if (error) {
      assert.match(error, /^This link could not be read \(.+\), so the default view is shown\.$/, hash);
      assert.doesNotMatch(error, /undefined|TypeError|is not a function/, hash);
      assert.deepEqual(state, fresh, hash);
    } else {
      // Unknown keys are ignored: the rest of the state is the default one.
      assert.deepEqual(state, fresh, hash);
    }
  }
  assert.equal(Object.prototype.toString.call({}), '[object Object]', 'no prototype was touched');
});

test('store: interventionOf expands * ends to the paths from an earlier layer into a later one', () => {
  const config = { n_layers: 2, n_heads: 2, pos_embed: 'standard' };
  const iv = S.interventionOf({ ablate: ['L0H1'], cut: ['*>*.q', 'L0H0>L1H1.k'], nopos: true }, config);
  assert.deepEqual(iv.ablate, [{ layer: 0, head: 1 }]);
  assert.equal(iv.removePos, true);
  assert.deepEqual(iv.cut.filter((c) => c.input === 'q').map((c) => `${c.from}>${c.to}`),
    ['0,0>1,0', '0,0>1,1', '0,1>1,0', '0,1>1,1']);
  assert.deepEqual(iv.cut.filter((c) => c.input === 'k'), [{ from: [0, 0], to: [1, 1], input: 'k' }]);
  assert.equal(S.checkState({ model: 'm', cut: ['L1H0>L0H0.k'], ablate: [] }, { config }), 'the cut L1H0>L0H0.k does not go from an earlier layer to a later one');
  assert.match(S.checkState({ model: 'm', head: 'L2H0', ablate: [], cut: [] }, { config }), /m has no head L2H0 \(it has 2 layers of 2 heads\)/);
  assert.match(S.checkState({ model: 'm', snapshot: 'step5', ablate: [], cut: [] }, { config, snapshots: ['step0'] }), /no training snapshot step5/);
  assert.equal(S.checkState({ model: 'm', head: 'L1H1', ablate: ['L0H0'], cut: ['*>*.v'] }, { config }), null);
});

test('store: a layer\'s MLP output (L0MLP) is ablated through the link, for models with MLPs only', () => {
  const gelu = { n_layers: 2, n_heads: 2, d_mlp: 8, pos_embed: 'standard' };
  const attn = { n_layers: 2, n_heads: 2, d_mlp: 0, pos_embed: 'standard' };
  const st = { ...S.DEFAULT_STATE, model: 'm', ablate: ['L0H1', 'L1MLP'] };
  const back = S.decodeHash(`#${S.encodeState(st)}`);
  assert.equal(back.error, null);
  assert.deepEqual(back.state.ablate, ['L0H1', 'L1MLP']);
  const iv = S.interventionOf(st, gelu);
  assert.deepEqual(iv.ablate, [{ layer: 0, head: 1 }]);
  assert.deepEqual(iv.ablateMlp, [{ layer: 1 }]);
  assert.equal(S.checkState(st, { config: gelu }), null);
  assert.match(S.checkState(st, { config: attn }), /m has no MLP to ablate \(L1MLP\): it is attention-only/);
  assert.match(S.checkState({ ...st, ablate: ['L2MLP'] }, { config: gelu }), /m has no layer 2/);
  assert.match(S.decodeHash('#v=2&ablate=L0MLX').error, /not a head such as L1H2 or a layer's MLP such as L0MLP/);
});

test('store: the ablation kind (abl) goes into the link, into the intervention with the cuts and ablations, in the IOI and Induction views', () => {
  const config = { n_layers: 2, n_heads: 1, pos_embed: 'standard' };
  assert.equal(S.DEFAULT_STATE.abl, 'zero');
  // Zero is the default and left out, so every link made before the key means what it meant.
  assert.doesNotMatch(S.encodeState({ ...S.DEFAULT_STATE, view: 'ioi', cut: ['*>*.q'] }), /abl=/);
  for (const abl of S.ABLATIONS) {
    const state = { ...S.DEFAULT_STATE, view: 'ioi', model: 'ioi-2l1h', cut: ['*>*.q'], abl };
    const hash = S.encodeState(state);
    assert.equal(/abl=/.test(hash), abl !== 'zero', hash);
    assert.deepEqual(S.decodeHash(`#${hash}`), { state, error: null }, hash);
    const iv = S.interventionOf(state, config);
    assert.equal(iv.ablation, abl === 'zero' ? undefined : abl, `${abl}: the boundary's ablation`);
    assert.equal(S.checkState(state, { config }), null);
  }
  // Without a cut there is nothing to replace: the intervention carries no kind.
  assert.deepEqual(S.interventionOf({ ablate: [], cut: [], abl: 'mean' }, config), {});
  // An odd value: a sentence naming the key and the kinds.
  const bad = S.decodeHash('#v=2&view=ioi&abl=median');
  assert.match(bad.error, /abl: "median" is not one of zero, mean, mean-all, resample/);
  // The Induction view replaces ablated heads and cuts alike (the core's repeated random tokens);
  // views that remove nothing refuse the key, and an MLP is zero-ablated only.
  const induction = { view: 'induction', model: 'char-2l', ablate: ['L0H0'], cut: [], abl: 'resample' };
  assert.equal(S.checkState(induction, { config }), null);
  assert.deepEqual(S.interventionOf(induction, config), { ablate: [{ layer: 0, head: 0 }], ablation: 'resample' });
  assert.match(S.checkState({ ...induction, view: 'circuits' }, { config }), /this view removes nothing/);
  assert.match(S.checkState({ ...induction, ablate: ['L0MLP'] }, { config: { ...config, d_mlp: 8 } }), /kept for heads only: an MLP is zero-ablated/);
  // Leaving the view or the model puts it back to zero, as the cut it goes with.
  const store = S.createStore({ view: 'ioi', model: 'ioi-2l1h', cut: ['*>*.v'], abl: 'mean' });
  store.dispatch({ type: 'model', model: 'ioi-1l2h' });
  assert.equal(store.state.abl, 'zero');
  store.dispatch({ type: 'set', values: { abl: 'mean-all' } });
  store.dispatch({ type: 'view', view: 'induction' });
  assert.equal(store.state.abl, 'zero');
});

// Compressed text (tz) is read by the store's own bounded decoder of lz-string's format.
const { lzBomb } = await import('../hardening/hostile-links-lib.mjs');
const LZ = (await import(pathToFileURL(path.join(site, 'vendor', 'lz-string.mjs')).href)).default;

test('store: damaged compressed text gives a sentence, not lz-string\'s TypeError', () => {
  // lz-string itself throws "Cannot read properties of undefined (reading 'charAt')" on these.
  for (const tz of ['y', 'z', 'yA', 'y$', 'zzzz']) {
    assert.throws(() => LZ.decompressFromEncodedURIComponent(tz), TypeError, `lz-string throws on ${tz}`);
    const { state, error } = S.decodeHash(`#v=2&tz=${tz}`);
    assert.equal(error, 'This link could not be read (its compressed text is damaged), so the default view is shown.', tz);
    assert.deepEqual(state, S.decodeHash('').state);
  }
});

test('store: the decoder reads what lz-string writes, and damaged streams as lz-string does (or refuses them)', () => {
  const r = rng(16);
  const alphabets = ['ab', 'abcdefgh ', 'é✓😀שלום', 'The cat sat on the mat. '];
  for (let i = 0; i < 500; i++) {
    const a = r.pick(alphabets);
    let text = '';
    for (let k = r.int(2000); k > 0; k--) text += a[r.int(a.length)];
    const packed = LZ.compressToEncodedURIComponent(text);
    assert.equal(S.unpackText(packed, Infinity), text, `text ${i}`);
    const chars = [...packed];
    for (let k = 0; k <= r.int(4); k++) chars[r.int(chars.length)] = 'ABCXYZabcxyz0189+-$@~'[r.int(21)];
    const damaged = r.next() < 0.3 ? packed.slice(0, r.int(packed.length)) : chars.join('');
    let want;
    try { want = LZ.decompressFromEncodedURIComponent(damaged); } catch { want = null; }
    const got = S.unpackText(damaged, Infinity);
    assert.equal(got === '' ? null : got, want === '' ? null : want, `damaged ${i}: ${damaged.slice(0, 60)}`);
  }
});

test('store: compressed text that explodes is refused before it is built', () => {
  // 26,000 codes (59 KB of link) stand for 338 million characters.
  const bomb = lzBomb(26_000);
  const t0 = performance.now();
  const { state, error } = S.decodeHash(`#v=2&tz=${bomb}`);
  const ms = performance.now() - t0;
  assert.equal(error, 'This link could not be read (its text is longer than 100,000 characters), so the default view is shown.');
  assert.deepEqual(state, S.decodeHash('').state);
  assert.ok(ms < 200, `refused in ${ms.toFixed(0)} ms`);
  assert.equal(S.unpackText(lzBomb(445)).length, 99_681, 'just under the limit it is read');
  assert.equal(S.decodeHash(`#v=2&tz=${lzBomb(445)}`).state.text, 'a'.repeat(99_681));
  assert.equal(S.unpackText(lzBomb(446)), Infinity, 'just over, refused');
});

test('store: a lone surrogate in compressed text reads as U+FFFD, so the next link can be written', () => {
  // A stream of one 16-bit literal, U+D800, and the end mark.
  const { state, error } = S.decodeHash('#v=2&tz=gAbQ');
  assert.equal(error, null);
  assert.equal(state.text, '\ufffd');
  assert.doesNotThrow(() => S.encodeState({ ...state, text: 'a\ud800b\udc00' }));
  assert.equal(S.decodeHash(S.encodeState({ ...state, text: 'a\ud800b' })).state.text, 'a\ufffdb');
  assert.equal(S.linkOf({ ...S.DEFAULT_STATE, text: '\udfff'.repeat(500) }).textLeftOut, false);
});

test('store: panel= names one panel of the link\'s view; it round-trips, and a view switch drops it', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  // PANELS is every panel the site has: each name's file exists and each panel file is listed.
  const files = [];
  for (const view of readdirSync(path.join(site, 'panels'), { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const f of readdirSync(path.join(site, 'panels', view.name)).filter((f) => f.endsWith('.js'))) {
      if (/export default/.test(readFileSync(path.join(site, 'panels', view.name, f), 'utf8'))) files.push(`${view.name}-${f.replace(/\.js$/, '')}`);
    }
  }
  assert.deepEqual([...S.PANELS].sort(), files.sort());
  for (const panel of S.PANELS) {
    const view = panel.split('-')[0];
    const hash = S.encodeState({ ...S.DEFAULT_STATE, view, panel, embed: true, hide: ['controls', 'header'] });
    assert.match(hash, new RegExp(`panel=${panel}`));
    const { state, error } = S.decodeHash(hash);
    assert.equal(error, null, hash);
    assert.deepEqual([state.view, state.panel, state.embed, state.hide], [view, panel, true, ['controls', 'header']]);
  }
  assert.match(S.decodeHash('#v=2&view=ioi&panel=induction-tokens').error, /the panel induction-tokens is not one of the IOI view's/);
  assert.match(S.decodeHash('#v=2&panel=induction-nothing').error, /panel: "induction-nothing" is not a panel such as induction-tokens/);
  const store = S.createStore({ view: 'ioi', panel: 'ioi-heads' });
  store.dispatch({ type: 'view', view: 'circuits' });
  assert.equal(store.state.panel, null);
});

test('store: patch= is denoise or noise; it round-trips, a bad value gives the codec\'s sentence, a view switch turns it off', () => {
  for (const patch of ['denoise', 'noise']) {
    const hash = S.encodeState({ ...S.DEFAULT_STATE, view: 'ioi', patch });
    assert.match(hash, new RegExp(`(^|&)patch=${patch}(&|$)`));
    const { state, error } = S.decodeHash(hash);
    assert.equal(error, null);
    assert.equal(state.patch, patch);
  }
  assert.doesNotMatch(S.encodeState({ ...S.DEFAULT_STATE, patch: null }), /patch/, 'off is left out of the link');
  assert.equal(S.decodeHash('#v=2&patch=both').error,
    'This link could not be read (patch: "both" is not one of denoise, noise), so the default view is shown.');
  const store = S.createStore({ view: 'induction' });
  store.dispatch({ type: 'set', values: { patch: 'noise' } });
  store.dispatch({ type: 'model', model: 'char-1l' });
  assert.equal(store.state.patch, 'noise', 'another model of the view keeps it');
  store.dispatch({ type: 'view', view: 'ioi' });
  assert.equal(store.state.patch, null, 'it belongs to the view left behind');
});

// Model files opened in the page (web/local-models.js): their names in links, and the registry the store consults.
const L = await import(pathToFileURL(path.join(site, 'local-models.js')).href);

test('store: model=local:NAME round-trips; hostile local names give the default state and a sentence', () => {
  for (const name of ['local:char-2l', 'local:my-model_1.2', 'local:tl-char-2l-3', `local:${'a'.repeat(64)}`]) {
    const hash = S.encodeState({ ...S.DEFAULT_STATE, view: 'circuits', model: name, head: 'L0H1' });
    const { state, error } = S.decodeHash(hash);
    assert.equal(error, null, hash);
    assert.equal(state.model, name);
    assert.equal(S.encodeState(state), hash);
  }
  for (const bad of ['local:', 'local:a/b', 'local:..%2F..%2Fx', 'local:%3Cscript%3E', 'local:local:x', 'LOCAL:x', 'local%3Ax%20y',
    `local:${'a'.repeat(65)}`, 'file:x', 'http:%2F%2Fevil', 'local:x%00', 'javascript:alert(1)']) {
    const { state, error } = S.decodeHash(`#v=2&model=${bad}`);
    assert.match(error ?? '', /^This link could not be read \(model: .* is not a model name\), so the default view is shown\.$/, bad);
    assert.deepEqual(state, S.decodeHash('').state, bad);
  }
});

test('local models: names made from file names, served by getModel, modelsFor and getSnapshots like shipped ones', async () => {
  assert.equal(L.localNameFor('my model (1).safetensors'), 'local:my-model-1');
  assert.equal(L.localNameFor('C:\\Users\\x\\a.SAFETENSORS'), 'local:a');
  assert.equal(L.localNameFor('../../<img src=x onerror=alert(1)>.safetensors'), 'local:img-src-x-onerror-alert-1');
  assert.equal(L.localNameFor('.safetensors'), 'local:model');
  assert.equal(L.localNameFor('ünïcode.safetensors'), 'local:n-code');
  assert.equal(L.localNameFor('x'.repeat(300)), `local:${'x'.repeat(48)}`);
  for (const f of ['a b', '<>', '..', 'x'.repeat(300), '\u0000', '😀.safetensors']) {
    assert.match(L.localNameFor(f), /^local:[\w.-]{1,64}$/, f);
    assert.equal(S.decodeHash(S.encodeState({ ...S.DEFAULT_STATE, model: L.localNameFor(f) })).error, null, f);
  }
  // A model the page has not opened: a sentence, and nothing fetched.
  await assert.rejects(S.getModel('local:nothing-here'), /local:nothing-here is a model file opened in another page: open the same file here \(Open a model file\) to see it\./);
  // Fake models: the registry asks the core which IOI task each is for (ioiKind(), whose rule the
  // core's tests check: ModelSession.IoiKindSaysWhichTaskAModelIsFor) and offers the views that suit it.
  const fake = (vocab, kind = null) => ({
    config: { n_layers: 2, n_heads: 2, d_vocab: vocab.length }, tokenizer: { kind: 'word', vocab }, ioiKind: () => kind,
  });
  const plain = fake(['<BOS>', 't0', 't1']);
  const symbolic = fake(['<BOS>', '<MID>', 'A', 'B', 'C', 'D', 'E', 'F'], 'symbolic');
  const templates = fake(['<BOS>', 'Mary'], 'templates');
  assert.deepEqual(L.viewsOf(plain), ['induction', 'circuits', 'training']);
  assert.deepEqual(L.viewsOf(symbolic), ['ioi', 'circuits', 'training']);
  assert.deepEqual(L.viewsOf(templates), ['ioi', 'circuits', 'training']);
  const a = L.registerLocal('plain.safetensors', plain, { size: 10 });
  const b = L.registerLocal('plain.safetensors', symbolic, { size: 10 });
  assert.deepEqual([a.name, b.name], ['local:plain', 'local:plain-2'], 'a second file of the same name gets a suffix');
  assert.match(a.title, /local file/);
  assert.equal(await S.getModel('local:plain'), plain);
  assert.equal(await S.getModel('local:plain-2'), symbolic);
  await assert.rejects(S.getModel('local:plain', { snapshot: 'step100' }), /no training snapshots/);
  assert.deepEqual(await S.getSnapshots('local:plain'), []);
  const names = async (view, o) => (await S.modelsFor(view, o)).map((m) => m.name);
  assert.ok((await names('induction')).includes('local:plain') && !(await names('induction')).includes('local:plain-2'));
  assert.ok((await names('ioi')).includes('local:plain-2') && !(await names('ioi')).includes('local:plain'));
  assert.ok(!(await names('ioi', { local: false })).includes('local:plain-2'));
  assert.deepEqual((await names('induction')).filter((n) => n.startsWith('local:')), ['local:plain'], 'after the shipped models');
  assert.deepEqual(L.localModels().map((m) => m.name), ['local:plain', 'local:plain-2']);
});

test('boot.js refuses links over the same length as the store (MAX_HASH)', async () => {
  const { readFileSync } = await import('node:fs');
  const boot = readFileSync(path.join(site, 'boot.js'), 'utf8');
  assert.match(boot, new RegExp(`length > ${S.MAX_HASH}\\b`));
  assert.deepEqual(S.refusedLink(S.MAX_HASH + 1), S.decodeHash(`#${'x'.repeat(S.MAX_HASH + 1)}`));
});

test('the training run: update() and reset() tell listeners only of a change, and the state stays frozen', () => {
  const run = S.createTrainingRun();
  assert.equal(run.state, S.NO_TRAINING_RUN);
  const seen = [];
  const off = run.subscribe((s, prev) => seen.push([s.state, s.step, prev.step]));
  run.update({ state: 'running', step: 3 });
  run.update({ step: 3 });            // no change: no call
  run.update({ step: 4 });
  assert.throws(() => { run.state.step = 9; }, TypeError);
  run.reset({ recipe: 'induction-2l' });
  assert.deepEqual(seen, [['running', 3, 0], ['running', 4, 3], ['idle', 0, 4]]);
  assert.equal(run.state.recipe, 'induction-2l');
  off();
  run.update({ step: 7 });
  assert.equal(seen.length, 3, 'no call after unsubscribing');
  // The page's store counts its changes before its listeners run.
  const store = S.createStore();
  let at = null;
  store.subscribe(() => { at = store.version; });
  store.dispatch({ type: 'set', values: { view: 'circuits' } });
  assert.equal(at, 1);
});

test('opening a model file is one action: the view that shows it, its settings reset, typed text kept only for a model that reads text', () => {
  const open = (state, a) => S.reduce({ ...S.DEFAULT_STATE, ...state }, { type: 'opened', model: 'local:m', views: ['induction', 'circuits', 'training'], readsText: true, view: null, message: 'Opened m', ...a });
  const here = open({ view: 'circuits', model: 'char-2l', head: 'L1H1', text: 'abc', snapshot: 'step500' });
  assert.deepEqual([here.view, here.model, here.head, here.snapshot, here.text], ['circuits', 'local:m', null, null, 'abc'], 'the view offers it: it stays');
  const moved = open({ view: 'ioi', model: 'ioi-1l2h', ablate: ['L0H1'] });
  assert.deepEqual([moved.view, moved.model, moved.ablate], ['induction', 'local:m', []], 'the IOI view does not offer it: its first view');
  assert.equal(open({ view: 'training' }).view, 'induction', 'the Training view shows a run, not a model: the first view');
  assert.equal(open({ view: 'circuits' }, { view: 'training' }).view, 'training', 'the view asked for');
  assert.equal(open({ view: 'induction', text: 'abc' }, { readsText: false }).text, null, 'a word or token-id model does not read the typed text');
});
