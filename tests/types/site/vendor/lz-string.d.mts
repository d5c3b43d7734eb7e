// The vendored build/site/vendor/lz-string.mjs (scripts/build.sh wraps node_modules/lz-string as
// an ES module with a default export): typed from the package's own declarations.
import * as LZString from 'lz-string';
export default LZString;
