//! `sqlx::migrate!` embeds `migrations/` at compile time; a new or edited migration must rebuild
//! this crate (as sqlx's `migrate build-script` advises).

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
