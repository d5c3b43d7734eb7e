// Whether the page shows the store's state, as every browser test decides it: the shown view is
// the store's view, it rendered the store's latest version (data-version, at least minVersion),
// and it is ready (data-ready "true", or "unavailable" for a view whose data the site lacks).
// Runs in the page (page.waitForFunction(VIEW_SETTLED, minVersion)): performance.now() when
// settled, else false. With {minVersion, complete: true}, the view must also have finished what
// it fills in after opening (data-complete, the IOI split accuracy), as a screenshot needs.
// No imports, so node-only tests can load the modules that use it.
export const VIEW_SETTLED = (arg = 0) => {
  const { minVersion = 0, complete = false } = typeof arg === 'number' ? { minVersion: arg } : arg;
  const s = /** @type {any} */ (window).__cs?.store;
  if (!s || s.version < minVersion) return false;
  const v = /** @type {HTMLElement | null} */ (document.querySelector('#view-host > .view:not([hidden])'));
  const ok = v && document.body.dataset.view === s.state.view && v.localName === `cs-${s.state.view}` &&
    Number(v.dataset.version) === s.version && (v.dataset.ready === 'true' || v.dataset.ready === 'unavailable') &&
    (!complete || v.dataset.complete === undefined || v.dataset.complete === 'true');
  return ok ? performance.now() : false;
};
