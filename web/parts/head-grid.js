// A grid of small per-head figures, one row per layer: each head is a button holding its figure
// (e.g. a canvas for drawPattern()) and its name, which selects the head, an Ablate toggle
// (aria-pressed) and a line of text under it. The selected head is outlined, ablated heads are
// dimmed. Class names start with `prefix` (<prefix>-grid, -layer, -head-cell, -head, -ablate, ...).
//
//   const grid = headGrid({layers, heads, prefix = 'cs-hg', figure(l, h) -> Node, onSelect(name),
//                          onAblate(name), empty: text shown for a model without layers,
//                          selectLabel(name): the select button's aria-label,
//                          mlps: true for a model with MLPs: each layer ends with its MLP's
//                          Ablate toggle, named "L{l}MLP" (data-mlp) and passed to onAblate})
//   setHeadGrid(grid, {selected: name | null, ablated: names, notes(name) -> string})
//   headCells(grid) -> [{name, l, h, figure, cell, select, ablate, note}] in layer-major order
// Each cell carries data-head="L{l}H{h}". No knowledge of the store.
import { el } from './dom.js';

/** @param {any} options */
export function headGrid({ layers, heads, prefix = 'cs-hg', figure = () => null, onSelect = () => {}, onAblate = () => {}, empty = 'No attention heads.', selectLabel = (name) => `${name}: select this head`, mlps = false }) {
  const grid = el('div', { class: `${prefix}-grid` });
  const cells = [];
  const mlpCells = [];
  for (let l = 0; l < layers; l++) {
    const row = el('div', { class: `${prefix}-layer`, role: 'group', 'aria-label': `Layer ${l}` }, el('span', { class: `${prefix}-layer-label` }, `Layer ${l}`));
    for (let h = 0; h < heads; h++) {
      const name = `L${l}H${h}`;
      const fig = figure(l, h);
      const select = el('button', { type: 'button', class: `${prefix}-head`, 'aria-label': selectLabel(name), 'aria-pressed': 'false', onclick: () => onSelect(name) },
        fig, el('span', { class: `${prefix}-head-name` }, name));
      const ablate = el('button', { type: 'button', class: `${prefix}-ablate`, 'aria-label': `Ablate ${name}`, 'aria-pressed': 'false', onclick: () => onAblate(name) }, 'Ablate');
      const note = el('span', { class: `${prefix}-head-score muted` });
      const cell = el('div', { class: `${prefix}-head-cell`, dataset: { head: name } }, select, ablate, note);
      cells.push({ name, l, h, figure: fig, cell, select, ablate, note, shown: { sel: false, abl: false, note: '' } });
      row.append(cell);
    }
    if (mlps) {
      const name = `L${l}MLP`;
      const ablate = el('button', { type: 'button', class: `${prefix}-ablate`, 'aria-label': `Ablate the MLP of layer ${l}`, 'aria-pressed': 'false', onclick: () => onAblate(name) }, 'Ablate');
      const cell = el('div', { class: `${prefix}-head-cell ${prefix}-mlp-cell`, dataset: { mlp: name } }, el('span', { class: `${prefix}-head-name` }, `MLP ${l}`), ablate);
      mlpCells.push({ name, cell, ablate, shown: { abl: false } });
      row.append(cell);
    }
    grid.append(row);
  }
  if (!layers) grid.append(el('p', { class: 'muted' }, empty));
  grid.csCells = cells;
  grid.csMlps = mlpCells;
  grid.csPrefix = prefix;
  return grid;
}

export const headCells = (grid) => grid.csCells;

/** @param {any} grid @param {any} state */
export function setHeadGrid(grid, { selected = null, ablated = [], notes = () => '' }) {
  const abl = new Set(ablated);
  for (const c of grid.csCells) {
    const s = c.shown;
    const isSel = c.name === selected;
    if (s.sel !== isSel) {
      s.sel = isSel;
      c.select.setAttribute('aria-pressed', String(isSel));
      c.select.classList.toggle('selected', isSel);
    }
    const isAbl = abl.has(c.name);
    if (s.abl !== isAbl) {
      s.abl = isAbl;
      c.ablate.setAttribute('aria-pressed', String(isAbl));
      c.ablate.textContent = isAbl ? 'Ablated' : 'Ablate';
      c.cell.classList.toggle('ablated', isAbl);
    }
    const note = notes(c.name);
    if (s.note !== note) { s.note = note; c.note.textContent = note; }
  }
  for (const m of grid.csMlps) {
    const isAbl = abl.has(m.name);
    if (m.shown.abl === isAbl) continue;
    m.shown.abl = isAbl;
    m.ablate.setAttribute('aria-pressed', String(isAbl));
    m.ablate.textContent = isAbl ? 'Ablated' : 'Ablate';
    m.cell.classList.toggle('ablated', isAbl);
  }
}
