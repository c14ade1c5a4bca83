//! Untrusted text as a model reads it (`domain::untrusted`), with boundaries from the operating
//! system's random source.

pub use domain::untrusted::*;

/// A fresh boundary: 128 bits from the operating system's random source.
pub fn random_boundary() -> Boundary {
    let mut bytes = [0_u8; 16];
    // Without the OS random source no boundary can be unknowable: nothing is sent.
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    Boundary::from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn boundaries_are_fresh() {
        assert_ne!(super::random_boundary(), super::random_boundary());
    }
}
