//! Embeds the web client (`web/public`) for `api::web`: memory-serve brotli-compresses text
//! assets at build time and reruns when a file there changes. Assets are embedded in every
//! profile, so tests serve exactly what ships and a binary never reads the source tree. No Node
//! is involved.
fn main() {
    memory_serve::load_directory_with_embed("../../web/public", true);
}
