//! Property tests of every parser of untrusted input: arbitrary bytes and mutations of real
//! inputs (the corpus) go in; what must come out is a value or a clean error, with no panic, in
//! bounded time and memory.
//!
//! `cargo xtask test` runs a short pass (128 cases a parser); `cargo xtask fuzz --minutes N` runs
//! this binary again and again with many more cases and fresh seeds. A failing input is shrunk
//! and its seed kept in `tests/proptest-regressions/<parser>.txt`, so every later run tries it
//! first: commit that file with the fix.

mod bodies;
mod cursors;
mod documents;
mod junk;
mod mime;
mod sse;
mod unsubscribe;
mod webhook;

use std::alloc::System;
use std::sync::{Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, Instant};

use peakmem_alloc::{INSTRUMENTED_SYSTEM, PeakMemAlloc, PeakMemAllocTrait};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};

/// Every allocation is counted, so a parse's peak memory can be measured.
#[global_allocator]
static ALLOCATOR: &PeakMemAlloc<System> = &INSTRUMENTED_SYSTEM;

/// One property at a time, so the peak counter (the process's) sees only the parse measured.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The largest input generated.
pub const MAX_INPUT: usize = 64 * 1024;

/// A parse of one input of at most [`MAX_INPUT`] bytes that takes longer than this is hung or
/// pathological (real parses take milliseconds; the margin absorbs a busy shared machine). This
/// is a hang detector, not a speed target: speed is measured by `cargo xtask bench`.
const HUNG: Duration = Duration::from_secs(10);

/// The memory a parse may use: a fixed allowance plus a multiple of its input's size.
const FIXED_BYTES: usize = 4 << 20;
const BYTES_PER_INPUT_BYTE: usize = 64;

/// Holds every other test of this binary off: what runs meanwhile is only this thread's.
pub fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Checks `test` on values of `strategy`: 128 cases unless `PROPTEST_CASES` says otherwise,
/// failing inputs shrunk and their seeds kept (and tried first) in
/// `tests/proptest-regressions/`, named after `source` (the caller's `file!()`).
pub fn property<S>(source: &'static str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let _serial = serial();
    // A panic's message, without a backtrace: capturing one (`RUST_BACKTRACE`) loads debug
    // information, tens of megabytes that would be charged to the parse that panicked.
    static QUIET: Once = Once::new();
    QUIET.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("{info}"))));
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 128;
    }
    config.source_file = Some(source);
    let mut runner = TestRunner::new(config);
    if let Err(error) = runner.run(&strategy, test) {
        panic!("{error}");
    }
}

/// Runs `parse` on an input of `len` bytes, failing the case when it takes too long or its peak
/// memory exceeds the allowance. Called inside [`property`], which keeps other tests off.
pub fn bounded<R>(len: usize, parse: impl FnOnce() -> R) -> R {
    ALLOCATOR.reset_peak_memory();
    let started = Instant::now();
    let result = parse();
    let took = started.elapsed();
    let peak = ALLOCATOR.get_peak_memory();
    assert!(took < HUNG, "a parse of {len} bytes took {took:?}");
    let allowed = FIXED_BYTES + BYTES_PER_INPUT_BYTE * len;
    assert!(
        peak <= allowed,
        "a parse of {len} bytes peaked at {peak} bytes (allowed {allowed})"
    );
    result
}

/// Byte strings that mean something to one parser or another, spliced in by mutation.
const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\n\n",
    b"\r\n\r\n",
    b"--",
    b"boundary=",
    b"Content-Type: multipart/mixed; boundary=\"b\"\r\n",
    b"Content-Transfer-Encoding: base64\r\n",
    b"Content-Transfer-Encoding: quoted-printable\r\n",
    b"=?utf-8?B?",
    b"=?iso-8859-1?Q?",
    b"?=",
    b"=\r\n",
    b"<",
    b">",
    b"<br>",
    b"<p>",
    b"\"",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"null",
    b"\0",
    b"\xff\xfe",
    b"\xc3",
    b"\xe2\x80\xae",
    b"data: ",
    b"id: ",
    b"event: ",
    b"retry: ",
    b"=",
    b"-1",
    b"99999999999999999999999",
    b"1e999",
];

#[derive(Clone, Debug)]
enum Mutation {
    FlipBit(Index, u8),
    Insert(Index, Vec<u8>),
    Token(Index, Index),
    Delete(Index, usize),
    Repeat(Index, usize, usize),
    Truncate(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit(at, bit)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        (any::<Index>(), any::<Index>()).prop_map(|(at, token)| Mutation::Token(at, token)),
        (any::<Index>(), 1usize..64).prop_map(|(at, len)| Mutation::Delete(at, len)),
        (any::<Index>(), 1usize..64, 2usize..512).prop_map(|(at, len, times)| Mutation::Repeat(at, len, times)),
        any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        // Positions index the bytes as they are now, end included.
        let at = |index: &Index, bytes: &Vec<u8>| index.index(bytes.len() + 1);
        match mutation {
            Mutation::FlipBit(index, bit) => {
                if !bytes.is_empty() {
                    let i = index.index(bytes.len());
                    bytes[i] ^= 1 << bit;
                }
            }
            Mutation::Insert(index, insert) => {
                let i = at(index, &bytes);
                bytes.splice(i..i, insert.iter().copied());
            }
            Mutation::Token(index, token) => {
                let i = at(index, &bytes);
                bytes.splice(i..i, token.get(TOKENS).iter().copied());
            }
            Mutation::Delete(index, len) => {
                let i = at(index, &bytes);
                let end = (i + len).min(bytes.len());
                bytes.drain(i..end);
            }
            Mutation::Repeat(index, len, times) => {
                let i = at(index, &bytes);
                let end = (i + len).min(bytes.len());
                let piece = bytes[i..end].to_vec();
                for _ in 1..*times {
                    if bytes.len() + piece.len() > MAX_INPUT {
                        break;
                    }
                    bytes.splice(end..end, piece.iter().copied());
                }
            }
            Mutation::Truncate(index) => {
                let i = at(index, &bytes);
                bytes.truncate(i);
            }
        }
    }
    bytes.truncate(MAX_INPUT);
    bytes
}

/// Inputs for a parser: arbitrary bytes, or one of `corpus` (real, well-formed inputs) mutated.
pub fn inputs(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..2048),
        3 => (prop::sample::select(corpus), prop::collection::vec(mutation(), 0..12))
            .prop_map(|(seed, mutations)| apply(seed, &mutations)),
    ]
}

/// Inputs as text (the parsers that take `&str`): mutated bytes made valid UTF-8.
pub fn text_inputs(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = String> {
    inputs(corpus).prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}
