// The page's light/dark theme: "auto" (the system's prefers-color-scheme), "light" or "dark",
// chosen with the header's Theme control. A display preference of this browser, kept in
// localStorage: not part of the page's state, so not in a link either. Applied as data-theme on
// <html> ("light" | "dark"; absent for auto), which the colour variables of style.css and
// views/views.css follow. Canvases read their colours when they draw, so every change (and a
// change of the system's scheme while on auto) sends 'cs-theme-change' on window: the line
// charts rebuild (parts/line-chart.js) and the views redraw their panels (element.js).
export const THEMES = Object.freeze(['auto', 'light', 'dark']);
const KEY = 'circuitscope-theme';

/** The stored choice ("auto" when none, or when storage is not available). */
export function savedTheme() {
  let v = null;
  try { v = localStorage.getItem(KEY); } catch { /* storage blocked: auto */ }
  return THEMES.includes(v) ? v : 'auto';
}

/** Shows the page in `theme`, stores the choice and tells the canvases. */
export function setTheme(theme) {
  if (!THEMES.includes(theme)) theme = 'auto';
  const root = document.documentElement;
  if (theme === 'auto') delete root.dataset.theme; else root.dataset.theme = theme;
  try { localStorage.setItem(KEY, theme); } catch { /* storage blocked: this page only */ }
  window.dispatchEvent(new CustomEvent('cs-theme-change', { detail: { theme } }));
}

// On load: the stored choice, and the header's control (when the page has one) kept in step.
const saved = savedTheme();
if (saved !== 'auto') document.documentElement.dataset.theme = saved;
const select = /** @type {HTMLSelectElement | null} */ (document.getElementById('theme-switch'));
if (select) {
  select.value = saved;
  select.addEventListener('change', () => setTheme(select.value));
}
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  if (savedTheme() === 'auto') window.dispatchEvent(new CustomEvent('cs-theme-change', { detail: { theme: 'auto' } }));
});
