// Many small pixel figures on one canvas. Each figure has a slot, an element the stylesheet sizes
// and places (e.g. inside a button of a head grid), and a surface that drawPattern() draws on as it
// would on a canvas of its own; the sheet, a canvas laid over the slots' container, shows each
// surface scaled into its slot's box, without smoothing. The browser then hands the compositor one
// canvas a frame instead of one per figure: with 16 thumbnails each a canvas of its own, Chromium
// spent about 14 ms of every keystroke producing them (tests/bench/bench_browser.mjs, realshape).
//
//   const sheet = thumbSheet(container)   a canvas.cs-sheet appended to `container` (positioned
//                                          by the stylesheet over it), pointer events passing through
//   const slot = sheet.slot(element)      registers `element` as a slot (class cs-sheet-slot); slot.surface is what
//                                          drawPattern() takes for a canvas ({width, height,
//                                          getContext('2d') with putImageData}), slot.alpha its opacity
//   sheet.paint()                         shows every surface in its slot (call after drawing;
//                                          the sheet also paints itself when the slots move or resize)
//   sheet.pixels(slot) -> ImageData       the surface's pixels (width x height), for tests and exports
//
// The slots' boxes are measured once after layout and again whenever the container, a slot or
// anything between them changes size (ResizeObserver), never while a keystroke draws.

const PER_ROW = 4;   // 4 x 176 pixels wide; 186 rows (744 heads) before a canvas grows too tall

/** @param {HTMLElement} container @param {{side: number}} options: a surface is at most side x side pixels */
export function thumbSheet(container, { side }) {
  const canvas = document.createElement('canvas');
  canvas.className = 'cs-sheet';
  canvas.setAttribute('aria-hidden', 'true');
  container.classList.add('cs-sheet-host');
  container.append(canvas);
  /** @type {any[]} */
  const slots = [];
  // Every surface's pixels, slot i at column i % PER_ROW, row floor(i / PER_ROW) of side x side
  // blocks (a canvas stays within the browser's largest side); a canvas never put in the page.
  const sprite = document.createElement('canvas');
  let spriteCtx = null;
  let boxes = null;   // {list: each slot's box, width, height}: the container's CSS pixels, null until measured
  const measure = () => {
    const c = container.getBoundingClientRect();
    if (!c.width || !c.height) return null;
    const list = slots.map((s) => {
      const e = s.element, r = e.getBoundingClientRect();
      // Inside the border: the slot's own frame stays visible around the figure.
      return { x: r.left - c.left + e.clientLeft, y: r.top - c.top + e.clientTop, w: e.clientWidth, h: e.clientHeight };
    });
    return { list, width: container.clientWidth, height: container.clientHeight };
  };
  const sheet = {
    canvas,
    /** @param {HTMLElement} element */
    slot(element) {
      const n = slots.length, x0 = (n % PER_ROW) * side, y0 = Math.floor(n / PER_ROW) * side;
      const s = { element, alpha: 1, x0, y0, width: 0, height: 0, surface: null };
      const fits = (v) => {
        if (!(v >= 0 && v <= side)) throw new RangeError(`a sheet's figure is at most ${side} pixels a side, not ${v}`);
        return v;
      };
      // What drawPattern() sees as a canvas: its size in pixels, and putImageData into the sprite.
      const ctx = {
        putImageData(img, dx, dy, x = 0, y = 0, w = img.width, h = img.height) {
          spriteCtx.putImageData(img, x0 + dx, y0 + dy, x, y, Math.min(w, s.width - dx - x), Math.min(h, s.height - dy - y));
        },
      };
      s.surface = {
        get width() { return s.width; },
        set width(v) { s.width = fits(v); clear(); },
        get height() { return s.height; },
        set height(v) { s.height = fits(v); clear(); },
        getContext: () => ctx,
        get isConnected() { return element.isConnected; },
      };
      // As a canvas's resize clears it.
      const clear = () => spriteCtx.clearRect(x0, y0, side, side);
      // Resizing clears the sprite: slots are added before anything is drawn.
      sprite.width = Math.min(n + 1, PER_ROW) * side;
      sprite.height = y0 + side;
      spriteCtx = sprite.getContext('2d', { willReadFrequently: true });
      /** @type {any} */ (element).csSurface = s.surface;
      // One class for every sheet's slots, whichever panel made them (the soak hovers them).
      element.classList.add('cs-sheet-slot');
      slots.push(s);
      // A slot moves when it, or anything between it and the container, changes size (a note
      // under a thumbnail grows, a row wraps): each of them is watched.
      for (let e = element; e && e !== container; e = e.parentElement) observer.observe(e);
      boxes = null;
      return s;
    },
    paint() {
      boxes ??= measure();
      if (!boxes) return;
      const dpr = window.devicePixelRatio || 1;
      // Sizes read from the last measure: reading the layout here would force it in mid-keystroke.
      const W = Math.round(boxes.width * dpr), H = Math.round(boxes.height * dpr);
      if (canvas.width !== W || canvas.height !== H) { canvas.width = W; canvas.height = H; }
      const ctx = canvas.getContext('2d');
      ctx.clearRect(0, 0, W, H);
      ctx.imageSmoothingEnabled = false;
      slots.forEach((s, i) => {
        const b = boxes.list[i];
        if (!s.width || !s.height || !b.w || !b.h) return;
        ctx.globalAlpha = s.alpha;
        ctx.drawImage(sprite, s.x0, s.y0, s.width, s.height, b.x * dpr, b.y * dpr, b.w * dpr, b.h * dpr);
      });
      ctx.globalAlpha = 1;
    },
    pixels(s) {
      return spriteCtx && s.width && s.height ? spriteCtx.getImageData(s.x0, s.y0, s.width, s.height) : new ImageData(1, 1);
    },
  };
  // Called after layout and before the frame is painted: the slots' new boxes show in that frame.
  // A container taken out of the page (another model's grid replaced it) stops being watched.
  const observer = new ResizeObserver(() => {
    if (!container.isConnected) { observer.disconnect(); return; }
    boxes = null;
    sheet.paint();
  });
  observer.observe(container);
  return sheet;
}
