// The vendored build/site/vendor/marked.mjs (scripts/build.sh copies marked's ES module):
// typed from the package's own declarations.
export * from 'marked';
