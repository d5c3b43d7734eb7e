// The vendored build/site/vendor/uPlot.mjs (scripts/build.sh wraps uPlot's minified build as an
// ES module with a default export): typed from the package's own declarations.
import uPlot from 'uplot';
export default uPlot;
