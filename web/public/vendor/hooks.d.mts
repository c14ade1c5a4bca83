// Types of the vendored preact/hooks module: the npm package's own declarations (web/e2e/package.json pins
// the same release as web/update-vendor.sh).
export * from "preact/hooks";
