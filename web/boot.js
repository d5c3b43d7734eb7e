// Runs first, before the page loads anything else (a classic script at the top of index.html).
// A link longer than any the page accepts (store.js's MAX_HASH, 65536 characters) is taken out
// of the address bar at once: the browser would otherwise carry the megabyte URL through every
// module and file the page loads. app.js then says why the link could not be read, from the
// length kept in data-refused-link.
(function () {
  var length = location.hash.length - 1;
  if (length > 65536) {
    document.documentElement.setAttribute('data-refused-link', String(length));
    history.replaceState(null, '', location.pathname + location.search);
  }
})();
