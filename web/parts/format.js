// Numbers as the page shows them: `d` decimals, and an en dash for a value that is not finite (a
// score the core leaves NaN, e.g. with no repeated token).
export const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
