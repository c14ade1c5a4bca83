// Types of the vendored htm module: the npm package's own declarations (web/e2e/package.json pins
// the same release as web/update-vendor.sh).
export * from "htm";
import htm from "htm";
export default htm;
