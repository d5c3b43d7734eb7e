// The vendored build/site/vendor/purify.mjs (scripts/build.sh copies DOMPurify's ES module):
// typed from the package's own declarations.
import DOMPurify from 'dompurify';
export default DOMPurify;
