// Types of the vendored @preact/signals-core module: the npm package's own declarations (web/e2e/package.json pins
// the same release as web/update-vendor.sh).
export * from "@preact/signals-core";
