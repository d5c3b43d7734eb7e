// The embed code of the page's state: an <iframe> of the app at that state (the whole view, or
// one panel alone with panel=VIEW-PART) and the one line a host page adds so that the iframe
// follows its content's height (embed.js, which listens for the 'circuitscope:height' messages
// the embedded page posts). Used by the app's "Copy embed code" and by every panel's Embed button.
import { linkOf, siteUrl } from './store.js';

const attr = (s) => String(s).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** The script line a host page adds once to let circuitscope iframes size themselves. */
export const hostLine = () => `<script src="${attr(siteUrl('embed.js'))}" async></script>`;

/**
 * {code, note}: the <iframe> (and the host line) for `state` shown as an embed; `panel` picks one
 * panel alone ("VIEW-PART", of the state's view), `bare` hides the controls and the header,
 * `title` names the iframe. `note` says when the text had to be left out of the link.
 */
export function embedCode(state, { panel = null, bare = false, title = '' } = {}) {
  const link = linkOf({ ...state, embed: true, panel, hide: bare ? ['controls', 'header'] : [] });
  const src = `${siteUrl('')}#${link.hash}`;
  const height = panel ? 480 : 720;
  const code = `<iframe src="${attr(src)}" title="circuitscope: ${attr(title)}" width="100%" height="${height}" loading="lazy" style="border:0"></iframe> ${hostLine()}`;
  const note = link.textLeftOut ? ' The text is too long for a link, so the embed leaves it out.' : '';
  return { code, note };
}
