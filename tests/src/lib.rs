//! Cross-crate tests of Steward's architecture invariants live in `it/`; this library is empty.
