// circuitscope's embed helper for host pages: add once, anywhere on a page that holds circuitscope
// iframes (the line "Copy embed code" gives):
//   <script src="https://YOUR-HOST/PATH/embed.js" async></script>
// An embedded circuitscope page (#...&embed=1) posts {type: 'circuitscope:height', height} to its
// parent whenever its content's height changes; this sets the height of the iframe that sent it
// (matched by its window, and only from the origin of the iframe's own src), so each figure is as
// tall as its content. A classic script with no dependencies: it works under any origin.
(function () {
  var w = /** @type {any} */ (window);
  if (w.__circuitscopeEmbed) return;
  w.__circuitscopeEmbed = true;
  window.addEventListener('message', function (event) {
    var data = event.data;
    if (!data || data.type !== 'circuitscope:height') return;
    var height = Number(data.height);
    if (!isFinite(height) || height <= 0 || height > 100000) return;
    var frames = document.getElementsByTagName('iframe');
    for (var i = 0; i < frames.length; i++) {
      var frame = frames[i];
      if (frame.contentWindow !== event.source) continue;
      var origin;
      try { origin = new URL(frame.src, location.href).origin; } catch (e) { return; }
      if (origin !== event.origin) return;
      frame.style.height = Math.ceil(height) + 'px';
      frame.setAttribute('height', String(Math.ceil(height)));
      return;
    }
  });
})();
